"""Two nodes, statement latency > 0: the guarded UPDATE never double-acquires, read-then-write
does — and the invariant checker says so (exit 1), with the events that show it."""

import hashlib
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobsim import cli
from jobsim.format import scenario
from jobsim.tools import race as race_mod
from jobsim.analysis.checks import check
from jobsim.cli import main
from jobsim.sim.world import run


def _variant(text: str, strategy: str) -> str:
    assert "acquisition: guarded_update" in text
    return text.replace("acquisition: guarded_update", f"acquisition: {strategy}")


@pytest.mark.parametrize("strategy", ["guarded_update", "unguarded_update", "optimistic"])
def test_safe_strategies_never_double_acquire(race_text, strategy):
    """Under the atomic dialect every single-statement claim re-checks the lock at the
    instant it applies, and the optimistic claim checks the version: no double acquisition,
    no duplicate execution, every invariant holds."""
    sc = scenario.loads(_variant(race_text, strategy))
    result = run(sc)
    violations = check(result.trace, sc)
    assert violations == []


def test_optimistic_loses_races_instead(race_text):
    """Both nodes select the same candidates; the second UPDATE finds the version moved."""
    from jobsim.output.report import analyse

    a = analyse(run(scenario.loads(_variant(race_text, "optimistic"))))
    assert a.summary["acquisition"]["lost_races"] > 0
    assert a.summary["double_acquisitions"] == 0


def test_read_then_write_double_acquires_and_the_check_fails(race_text):
    sc = scenario.loads(_variant(race_text, "read_then_write"))
    violations = check(run(sc).trace, sc)
    kinds = {v.invariant for v in violations}
    assert kinds == {"exclusive_locks"}
    v = violations[0]
    assert len(v.events) == 2 and v.events[0] < v.events[1]


def test_read_then_write_needs_latency(race_text):
    """With zero latency the two statements of read-then-write apply at the same instant,
    before any other node's statement: nothing can slip in between."""
    text = _variant(race_text, "read_then_write").replace(
        "latency: {uniform: {low: 2ms, high: 8ms}}", "latency: 0s")
    sc = scenario.loads(text)
    assert check(run(sc).trace, sc) == []


def test_cli_exit_status_says_which(race_text, tmp_path, capsys):
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(race_text)
    bad.write_text(_variant(race_text, "read_then_write"))
    assert main(["run", str(good), "--out", str(tmp_path / "g"), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", str(bad), "--out", str(tmp_path / "b"), "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: exclusive_locks" in out
    assert "double acquisition" in out and "locked node=node-" in out
    summary = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert summary["double_acquisitions"] > 0
    assert summary["duplicate_executions"]["by_cause"]["unsafe_acquisition"] > 0
    assert summary["duplicate_executions"]["by_cause"]["unexplained"] == 0
    assert (tmp_path / "b" / "violations.txt").exists()
    assert not (tmp_path / "g" / "violations.txt").exists()


# --- jobsim race: the command line's checks, and the database left as it was -------------

PNG = b"\x89PNG\r\n\x1a\n"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _user_db(path: Path, wal: bool = False) -> None:
    """A user's SQLite file: a table with rows and an index, in DELETE (or WAL) mode."""
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, what TEXT NOT NULL)")
    conn.execute("CREATE INDEX orders_what ON orders (what)")
    conn.executemany("INSERT INTO orders (what) VALUES (?)", [("apples",), ("pears",)])
    conn.commit()
    conn.close()


def _state(path: Path) -> tuple[str, list, list]:
    """(journal mode, schema, the user's rows) as a new connection finds them."""
    conn = sqlite3.connect(path)
    try:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        schema = sorted(conn.execute("SELECT type, name, sql FROM sqlite_master").fetchall())
        rows = conn.execute("SELECT id, what FROM orders ORDER BY id").fetchall()
    finally:
        conn.close()
    return mode, schema, rows


def _no_race(monkeypatch):
    """Any real race (or prediction) now fails the test: the refusal must come first."""
    def boom(*a, **k):
        raise AssertionError("a race ran before the input was checked")

    monkeypatch.setattr(race_mod, "race", boom)
    monkeypatch.setattr(race_mod, "predict", boom)


#: how long a wait for an event (workers started, a job claimed) may last before the test
#: calls it stuck: never a verdict on speed, so generous for a busy machine
STUCK = 120.0


def _wait_for(what: str, done) -> None:
    deadline = time.monotonic() + STUCK
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"stuck: no {what} after {STUCK:.0f} s")
        time.sleep(0.01)


def _refused(argv, capsys, within=1.0) -> str:
    """The CLI refuses ``argv`` (exit 2, no traceback) within ``within`` CPU seconds of this
    process (a machine's other work does not count)."""
    t0 = time.process_time()
    status = cli.main(argv)
    took = time.process_time() - t0
    err = capsys.readouterr().err
    assert status == 2, err
    assert took < within, took
    assert "Traceback" not in err
    return err


def test_race_plot_path_is_checked_before_any_race(tmp_path, capsys, monkeypatch):
    """A --plot the race could not write used to fail after the whole race; a user's file
    would have been overwritten. Now: exit 2 at once, naming the path, nothing touched."""
    _no_race(monkeypatch)
    db = tmp_path / "r.db"
    theirs = tmp_path / "notes.png"  # a PNG by name only: the user's text
    theirs.write_text("my notes\n")
    folder = tmp_path / "a-folder"
    folder.mkdir()
    (tmp_path / "link.png").symlink_to(tmp_path / "elsewhere.png")
    before = _digest(theirs)
    cases = [(tmp_path / "missing" / "race.png", "does not exist"),
             (folder, "not a regular file"),
             (tmp_path / "link.png", "not a regular file"),
             (theirs, "not a PNG")]
    for path, why in cases:
        err = _refused(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                        "--workers", "2", "--jobs", "10", "--plot", str(path)], capsys)
        assert f"--plot {path}" in err and why in err, err
        assert err.count("\n") == 1  # one line
    assert _digest(theirs) == before
    assert not db.exists()  # not even opened
    assert not (tmp_path / "elsewhere.png").exists() and sorted(folder.iterdir()) == []
    # every strategy's settings too, not only the first race's
    err = _refused(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                    "--strategy", "skip_locked", "--workers", "2", "--jobs", "10"], capsys)
    assert "skip_locked" in err and not db.exists()


def test_race_replaces_only_a_png_and_writes_it_whole(tmp_path, capsys):
    db, plot = tmp_path / "r.db", tmp_path / "race.png"
    plot.write_bytes(PNG + b"an earlier plot")
    assert cli.main(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                     "--workers", "2", "--jobs", "100", "--plot", str(plot)]) == 0
    data = plot.read_bytes()
    assert data.startswith(PNG) and len(data) > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db", "race.png"]  # no temp file
    assert f"plot: {plot}" in capsys.readouterr().out


def test_race_time_limit_is_checked_by_argparse(tmp_path, capsys, monkeypatch):
    _no_race(monkeypatch)
    db = tmp_path / "r.db"
    for bad in ("-1", "0", "nan", "inf", "-inf", "86401", "1e9", "ten"):
        err = _refused(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                        f"--time-limit={bad}"], capsys)
        assert "argument --time-limit" in err and "seconds above 0 and at most 86,400" in err
        assert repr(bad) in err, err
    assert not db.exists()
    args = cli._parser().parse_args(["race", "--db", "sqlite:x", "--strategy", "s",
                                     "--time-limit", "0.5"])
    assert args.time_limit == 0.5
    monkeypatch.undo()
    with pytest.raises(race_mod.RaceError, match="time limit"):  # the library says so too
        race_mod.race(f"sqlite:{db}", "guarded_update", 2, 10, time_limit=float("nan"))
    assert not db.exists()


@pytest.mark.parametrize("flag,most,bad", [
    ("--jobs", "1,000,000", ["1000001", "0", "-3", "many", "2.5"]),
    ("--workers", "64", ["65", "0", "1000000"]),
    ("--batch", "10,000", ["10001", "0"]),
    ("--repeat", "1,000", ["1001", "0", "1000000000"]),
])
def test_race_numbers_are_bounded_by_argparse(tmp_path, capsys, monkeypatch, flag, most, bad):
    _no_race(monkeypatch)
    db = tmp_path / "r.db"
    for value in bad:
        err = _refused(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                        f"{flag}={value}"], capsys)
        assert f"argument {flag}" in err and f"from 1 to {most}" in err and repr(value) in err
    assert not db.exists()
    top = {"--jobs": "1000000", "--workers": "64", "--batch": "10000", "--repeat": "1000"}
    args = cli._parser().parse_args(["race", "--db", "sqlite:x", "--strategy", "s",
                                     flag, top[flag]])
    assert getattr(args, flag[2:]) in (int(top[flag]), [int(top[flag])])


def test_race_leaves_a_users_sqlite_file_as_it_was(tmp_path, capsys):
    """The race made the file WAL for good and left its table 'job' and a marker table
    behind. Now its own table is dropped and the journal mode put back; the user's table,
    index and rows are untouched — in DELETE and in WAL mode."""
    for wal in (False, True):
        db = tmp_path / f"theirs-{wal}.db"
        _user_db(db, wal=wal)
        before = _state(db)
        assert before[0] == ("wal" if wal else "delete")
        assert cli.main(["race", "--db", f"sqlite:{db}", "--strategy", "read_then_write",
                         "--workers", "2", "--jobs", "200"]) == 0
        assert "| read_then_write | 2 | 1 | real |" in capsys.readouterr().out
        assert _state(db) == before
    assert not list(tmp_path.glob("*-wal")) and not list(tmp_path.glob("*-shm"))


def test_race_refuses_a_users_job_table_and_changes_nothing(tmp_path, capsys):
    """A table 'job' that the race did not mark is the user's: refused, and the file is
    byte for byte as it was (the refusal used to come after switching it to WAL)."""
    for name in ("job", "JOB"):
        db = tmp_path / f"{name}.db"
        _user_db(db)
        conn = sqlite3.connect(db)
        conn.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, payload TEXT)")
        conn.execute(f"INSERT INTO {name} (payload) VALUES ('keep me')")
        conn.commit()
        conn.close()
        before = _digest(db)
        err = _refused(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                        "--workers", "2", "--jobs", "10"], capsys, within=5.0)
        assert "a table 'job' that jobsim race did not create" in err
        assert _digest(db) == before
        assert sorted(p.name for p in tmp_path.glob(f"{name}.db*")) == [f"{name}.db"]


def test_race_drops_its_own_leftover_table_and_an_older_jobsims(tmp_path):
    """A table the race marked (left by a killed race), or an older jobsim's 'job' beside its
    empty 'jobsim_race' marker, is the race's: dropped and made anew, then dropped."""
    own = tmp_path / "own.db"
    _user_db(own)
    conn = sqlite3.connect(own)
    conn.execute(race_mod._SQLITE_CREATE)
    conn.commit()
    conn.close()
    old = tmp_path / "old.db"
    _user_db(old)
    conn = sqlite3.connect(old)
    conn.execute(race_mod._LEGACY_SQLITE)
    conn.execute(race_mod._LEGACY_MARKER_SQLITE)
    conn.commit()
    conn.close()
    for db in (own, old):
        race_mod.race(f"sqlite:{db}", "guarded_update", 2, 50)
        assert sorted(r[1] for r in _state(db)[1]) == ["orders", "orders_what"]


def test_a_failed_race_cleans_up_too(tmp_path):
    """A harness check that fails (a tiny time limit: jobs left unclaimed) still drops the
    race's table and restores the journal mode."""
    db = tmp_path / "theirs.db"
    _user_db(db)
    before = _state(db)
    with pytest.raises(race_mod.RaceError, match="never claimed"):
        race_mod.race(f"sqlite:{db}", "guarded_update", 2, 20000, 1, time_limit=0.001)
    assert _state(db) == before


def test_ctrl_c_in_process_stops_the_workers_and_cleans_up(tmp_path, capsys, monkeypatch):
    """KeyboardInterrupt while the workers race: they are stopped and reaped, the table is
    dropped, the journal mode restored; the CLI says so in one line and exits 130 (Ctrl-C)."""
    monkeypatch.setenv("JOBSIM_PROGRESS", "0")
    db = tmp_path / "theirs.db"
    _user_db(db)
    before = _state(db)
    seen: dict[str, list[int]] = {}

    def claimed() -> int:
        conn = sqlite3.connect(db, timeout=5)
        try:
            return conn.execute("SELECT count(*) FROM job WHERE locked_by IS NOT NULL"
                                ).fetchone()[0]
        except sqlite3.Error:
            return 0
        finally:
            conn.close()

    def interrupted(pending, timeout):
        _wait_for("3 workers", lambda: len(multiprocessing.active_children()) >= 3)
        # past the workers' common start: they are claiming (an event, not a time that a
        # busy machine can stretch)
        _wait_for("claim", lambda: claimed() > 0)
        seen["pids"] = [p.pid for p in multiprocessing.active_children()]
        seen["claimed"] = claimed()
        raise KeyboardInterrupt

    monkeypatch.setattr(race_mod, "_collect", interrupted)
    status = cli.main(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                       "--workers", "3", "--jobs", "200000", "--batch", "1"])
    out, err = capsys.readouterr()
    assert status == 130
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("jobsim: stopped by SIGINT (Ctrl-C); 0 of 1 races were run; the "
                          "workers were stopped")
    assert "table dropped" in err
    assert len(seen["pids"]) == 3 and seen["claimed"] > 0
    assert multiprocessing.active_children() == []
    for pid in seen["pids"]:
        assert not Path(f"/proc/{pid}").exists()
    assert _state(db) == before
    assert "| guarded_update" not in out


def _session_members(sid: int) -> list[int]:
    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[3]) == sid:
                found.append(int(d))
    return found


def _stuck_report(p: subprocess.Popen) -> str:
    """What each process of a stuck session is doing: its state, its signals (blocked,
    ignored, caught) and where it waits in the kernel, then the Python stacks that SIGABRT
    makes faulthandler print."""
    lines = []
    for pid in _session_members(p.pid):
        try:
            status = dict(line.split(":", 1) for line in
                          Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
            wchan = Path(f"/proc/{pid}/wchan").read_text()
        except OSError:
            continue
        lines.append(f"pid {pid}: " + ", ".join(f"{k} {status.get(k, '?').strip()}" for k in (
            "State", "SigBlk", "SigIgn", "SigCgt")) + f", wchan {wchan}")
    os.killpg(p.pid, signal.SIGABRT)
    try:
        _, err = p.communicate(timeout=STUCK)
    except subprocess.TimeoutExpired:
        err = "(no answer to SIGABRT either)"
    return "\n".join(lines) + "\n" + err[-8000:]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_ctrl_c_from_a_terminal_leaves_no_process_and_no_traceback(tmp_path):
    """A real Ctrl-C: SIGINT to the whole process group (the CLI and its workers), as a
    terminal sends it, while the workers claim."""
    db = tmp_path / "theirs.db"
    _user_db(db)
    before = _state(db)
    # PYTHONFAULTHANDLER: if it is stuck, SIGABRT makes each process print its Python stack
    env = {**os.environ, "JOBSIM_PROGRESS": "0", "PYTHONFAULTHANDLER": "1"}
    # Ctrl-C as a terminal's shell leaves it: not ignored. A run started in the background
    # by a shell without job control (`pytest &`, some CI runners) ignores SIGINT, and a child
    # inherits that: jobsim race then never saw the Ctrl-C and ran on to its time limit (the
    # "hang" of loaded runs of the whole suite, which ran in the background)
    p = subprocess.Popen([sys.executable, "-m", "jobsim", "race", "--db", f"sqlite:{db}",
                          "--strategy", "guarded_update", "--workers", "3", "--jobs", "300000",
                          "--batch", "1"], start_new_session=True, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + STUCK  # a guard for a stuck start, not a verdict
        claimed = 0
        while claimed < 50 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
            conn = sqlite3.connect(db, timeout=5)
            try:
                claimed = conn.execute("SELECT count(*) FROM job WHERE locked_by IS NOT NULL"
                                       ).fetchone()[0]
            except sqlite3.Error:
                claimed = 0
            finally:
                conn.close()
        assert claimed >= 50 and p.poll() is None
        assert len(_session_members(p.pid)) == 4  # the CLI and its 3 workers
        os.killpg(p.pid, signal.SIGINT)
        try:
            _, err = p.communicate(timeout=STUCK)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running {STUCK:.0f} s after Ctrl-C:\n{_stuck_report(p)}")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130
    assert err.startswith("jobsim: stopped by SIGINT (Ctrl-C); 0 of 1 races were run")
    assert err.count("\n") == 1
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert _session_members(p.pid) == []
    assert _state(db) == before


def test_race_progress_table_header_and_the_simulated_clock(tmp_path, capsys, monkeypatch):
    """A bar over the races (set after each); the table's column says real or simulated
    under 'source'; the note says the simulated claims/s count simulated seconds."""
    bars = []

    class Recorder:
        def __init__(self, total, desc, unit="it", **kw):
            self.args, self.sets, self.closed = (total, desc, unit), [], False
            bars.append(self)

        def set(self, n, postfix=None):
            self.sets.append(n)

        def stage(self, text):
            pass

        def close(self):
            self.closed = True

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    import jobsim.base.progress

    monkeypatch.setattr(jobsim.base.progress, "Bar", Recorder)
    db = tmp_path / "r.db"
    assert cli.main(["race", "--db", f"sqlite:{db}", "--strategy", "guarded_update",
                     "--workers", "2", "--workers", "3", "--jobs", "100"]) == 0
    out = capsys.readouterr().out
    (bar,) = bars
    assert bar.args == (2, "race", "races") and bar.closed
    assert bar.sets == [0, 1, 1, 2]
    lines = out.splitlines()
    head = next(line for line in lines if line.startswith("| strategy"))
    assert head.split(" | ")[:4] == ["| strategy", "K", "run", "source"]
    assert "|  |" not in head
    import re

    runs = [x for x in lines if re.match(r"\| guarded_update \| \d \| \d+ \| ", x)]
    assert len(runs) == 4 and {x.split(" | ")[3] for x in runs} == {"real", "simulated"}
    agreement = [x for x in lines if x.startswith("| guarded_update | ") and x not in runs]
    assert {x.split(" | ")[2] for x in agreement} == {"verdict", "doubled share", "claims/s",
                                                     "CPU wait", "CPU µs per claim"}
    assert any("| verdict |" in x and x.endswith("| agrees |") for x in agreement)
    # without a profile only the verdict is expected to agree: no yes or NO for the figures
    figures = [x for x in agreement if "| simulated |" in x and
               x.split(" | ")[2] in ("doubled share", "claims/s")]
    assert figures and all(x.endswith("| not expected |") for x in figures)
    assert any(x.startswith("Expected to agree") or "Expected to agree" in x for x in lines)
    note = lines[lines.index(next(x for x in lines if x.startswith("claims/s:")))]
    assert "wall-clock second" in note and "per SIMULATED second" in note
    assert "not comparable" in note


def _pg_tables(dsn: str) -> dict[str, list]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        names = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() ORDER BY table_name")]
        return {n: conn.execute(f"SELECT * FROM {n} ORDER BY 1").fetchall() for n in names}


def test_race_on_postgres_keeps_the_users_tables(pg, capsys, monkeypatch):
    """Beside a user's table the race makes, uses and drops only its own; a user's 'job' is
    refused and kept; Ctrl-C while the workers claim leaves the same state."""
    import psycopg

    with psycopg.connect(pg, autocommit=True) as conn:
        for t in ("job", "jobsim_race", "orders"):
            conn.execute(f"DROP TABLE IF EXISTS {t}")
        conn.execute("CREATE TABLE orders (id INT PRIMARY KEY, what TEXT)")
        conn.execute("INSERT INTO orders VALUES (1, 'apples'), (2, 'pears')")
    before = _pg_tables(pg)
    assert cli.main(["race", "--db", pg, "--strategy", "skip_locked", "--workers", "2",
                     "--jobs", "200"]) == 0
    assert "| skip_locked | 2 | 1 | real |" in capsys.readouterr().out
    assert _pg_tables(pg) == before

    def claims() -> int:
        with psycopg.connect(pg, autocommit=True) as conn:
            try:
                return conn.execute("SELECT count(*) FROM job WHERE locked_by IS NOT NULL"
                                    ).fetchone()[0]
            except psycopg.Error:  # the race's table is not there yet
                return 0

    def interrupted(pending, timeout):
        _wait_for("claim", lambda: claims() > 0)  # while the workers claim
        raise KeyboardInterrupt

    monkeypatch.setattr(race_mod, "_collect", interrupted)
    monkeypatch.setenv("JOBSIM_PROGRESS", "0")
    assert cli.main(["race", "--db", pg, "--strategy", "guarded_update", "--workers", "4",
                     "--jobs", "200000", "--batch", "1"]) == 130
    err = capsys.readouterr().err
    assert err.startswith("jobsim: stopped by SIGINT (Ctrl-C); 0 of 1 races were run")
    assert "dropped" in err
    assert multiprocessing.active_children() == []
    assert _pg_tables(pg) == before
    monkeypatch.undo()

    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute("CREATE TABLE job (id INT PRIMARY KEY, payload TEXT)")
        conn.execute("INSERT INTO job VALUES (1, 'keep me')")
    theirs = _pg_tables(pg)
    err = _refused(["race", "--db", pg, "--strategy", "guarded_update", "--workers", "2",
                    "--jobs", "10"], capsys, within=5.0)
    assert "a table 'job' that jobsim race did not create" in err
    assert _pg_tables(pg) == theirs
    with psycopg.connect(pg, autocommit=True) as conn:
        conn.execute("DROP TABLE job")
        conn.execute("DROP TABLE orders")
