"""A user's files are sacred, and no input makes jobsim hang, blow up or print a traceback.

jobsim writes into a folder only if it is new, empty, or carries jobsim's manifest, and it
replaces only files the manifest lists while they still hold what it wrote. Every input an
audit found unbounded or crashing answers with exit 2 and a clear message, within 3 CPU
seconds more than a valid command and 500 MB, measured on a child process.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from jobsim.base import outdir
from jobsim.cli import main

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "scenarios" / "lesson.yaml"


def _users_folder(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True)
    (folder / "report.md").write_text("# my thesis notes\n")
    (folder / "thesis.tex").write_text("\\documentclass{article}\n")
    (folder / "src").mkdir()
    (folder / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    return _snapshot(folder)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_run_never_replaces_a_users_folder_that_has_a_report_md(tmp_path, capsys):
    folder = tmp_path / "mine"
    before = _users_folder(folder)
    assert main(["run", str(LESSON), "--quiet", "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert str(folder) in err and "did not write it" in err
    assert _snapshot(folder) == before


def test_reports_never_replaces_a_users_folder(tmp_path, capsys):
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "lesson.yaml").write_bytes(LESSON.read_bytes())
    before = _users_folder(tmp_path / "reports" / "lesson")
    assert main(["reports", str(scenarios), "--out", str(tmp_path / "reports")]) == 2
    assert "lesson" in capsys.readouterr().err
    assert _snapshot(tmp_path / "reports" / "lesson") == before


def test_a_second_run_replaces_its_own_files_and_keeps_the_users(tmp_path):
    out = tmp_path / "r"
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    (out / "my-notes.txt").write_text("keep me")
    assert main(["run", str(LESSON), "--quiet", "--out", str(out), "--seed", "3"]) == 0
    assert (out / "my-notes.txt").read_text() == "keep me"
    manifest = outdir.read_manifest(out)
    assert "my-notes.txt" not in manifest["files"] and "report.md" in manifest["files"]
    assert "seed: 3" in (out / "scenario.yaml").read_text()


def test_a_report_the_user_edited_is_not_replaced(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    (out / "report.md").write_text("my edits")
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 2
    assert "report.md changed since jobsim wrote it" in capsys.readouterr().err
    assert (out / "report.md").read_text() == "my edits"


def test_an_edit_that_keeps_size_and_time_is_seen_though_digests_are_remembered(tmp_path):
    """``sha256_of`` remembers a digest by the file's identity, size, mtime and ctime (a run
    checks its folder four times): an edit in place of the same length, its mtime set back,
    still moves the ctime, and the edit is seen in the same process."""
    out = tmp_path / "r"
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    path = out / "summary.json"
    assert outdir.check(out, "report") is not None  # its digest is remembered now
    before = path.stat()
    text = path.read_bytes()
    with open(path, "r+b") as f:  # the same inode, the same length, one byte changed
        f.write(b"[" if text[:1] != b"[" else b"{")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == \
        (before.st_ino, before.st_size, before.st_mtime_ns)
    with pytest.raises(outdir.OutputError, match="summary.json changed since jobsim wrote"):
        outdir.check(out, "report")


def test_folders_get_the_users_umask_not_0700(tmp_path):
    old = os.umask(0o022)
    try:
        out = tmp_path / "deep" / "r"
        assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    finally:
        os.umask(old)
    for d in (tmp_path / "deep", out):
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, oct(d.stat().st_mode)


def test_an_interrupted_write_leaves_the_old_report_and_no_temporary_folder(tmp_path,
                                                                            monkeypatch):
    out = tmp_path / "r"
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    before = _snapshot(out)
    from jobsim.output import report

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "markdown", boom)
    assert main(["run", str(LESSON), "--quiet", "--out", str(out), "--seed", "5"]) == 130
    assert _snapshot(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["r"]


# --- inputs that once hung, grew without bound or printed a traceback -----------------------

SCENARIOS = {
    "huge-cluster": """name: a
nodes: 256
executor: {threads: 1024}
handlers: {w: {}}
workload: {streams: [{name: s, handler: w, count: 10000000, rate: 100/s}]}
""",
    "nanosecond-heartbeat": """name: a
nodes: 2
until: 3650d
horizon: 3650d
executor: {heartbeat: PT0.000000001S}
handlers: {w: {outcome: hang}}
workload: {jobs: [{handler: w}]}
""",
    "nanosecond-recurrence": """name: a
nodes: 2
handlers: {w: {}}
workload: {recurring: [{name: r, handler: w, every: PT0.000000001S, count: 10000000}]}
""",
    "million-attempts": """name: a
nodes: 2
handlers: {w: {outcome: always_fail, retry: {attempts: 1000000, backoff: {fixed: 1s}}}}
workload: {streams: [{name: s, handler: w, count: 10000000}]}
""",
    "name-with-a-newline": 'name: "advnl\\n"\nnodes: 1\nhandlers: {w: {}}\n'
                           'workload: {jobs: [{handler: w}]}\n',
    "expect-nan": "name: a\nnodes: 1\nhandlers: {w: {}}\nworkload: {jobs: [{handler: w}]}\n"
                  "expect: {jobs.done: '== nan'}\n",
    "sweep-grid-3x1000": "name: a\nnodes: 1\nhandlers: {w: {}}\n"
                         "workload: {jobs: [{handler: w}]}\nsweep:\n  grid:\n"
                         + "".join(f"    {p}: [{', '.join(str(i) for i in range(1, 1001))}]\n"
                                   for p in ("executor.threads", "executor.batch_size",
                                             "executor.queue_size")),
}


def _cases(tmp: Path) -> dict[str, list[str]]:
    files = {}
    for name, text in SCENARIOS.items():
        f = tmp / f"{name}.yaml"
        f.write_text(text)
        files[name] = str(f)
    fifo = tmp / "fifo.yaml"
    os.mkfifo(fifo)
    return {
        **{f"run {n}": ["run", f, "--out", str(tmp / "out")] for n, f in files.items()
           if n != "sweep-grid-3x1000"},
        "validate sweep-grid-3x1000": ["validate", files["sweep-grid-3x1000"]],
        "sweep sweep-grid-3x1000": ["sweep", files["sweep-grid-3x1000"],
                                    "--out", str(tmp / "sw")],
        "run /dev/zero": ["run", "/dev/zero"],
        "run /dev/urandom": ["run", "/dev/urandom"],
        "run a FIFO with no writer": ["run", str(fifo)],
        "sweep --replications 1e8": ["sweep", str(LESSON), "--grid", "executor.threads=1,2",
                                     "--replications", "100000000", "--out", str(tmp / "sw")],
        "sweep --grid of 1e9 points": ["sweep", str(LESSON), "--out", str(tmp / "sw")] + [
            a for i, p in enumerate(("executor.threads", "executor.batch_size",
                                     "executor.queue_size"))
            for a in ("--grid", f"{p}=" + ",".join(str(v) for v in range(1, 1001)))],
        "sweep --dask garbage://x": ["sweep", str(LESSON), "--grid", "executor.threads=1,2",
                                     "--dask", "garbage://x", "--out", str(tmp / "sw")],
        "bench --jobs 1e12": ["bench", "--jobs", "1000000000000"],
        "race --time-limit -1": ["race", "--db", f"sqlite:{tmp / 'r.db'}", "--strategy",
                                 "guarded_update", "--time-limit", "-1"],
        "race --plot into a missing folder": ["race", "--db", f"sqlite:{tmp / 'r.db'}",
                                              "--strategy", "guarded_update",
                                              "--plot", str(tmp / "nope" / "x.png")],
        "run --budget nan": ["run", str(LESSON), "--budget", "nan"],
    }


#: CPU seconds (user + system) a refusal may take in its child beyond what the child of a
#: valid ``jobsim validate`` of the lesson takes in the same test (starting Python and
#: importing jobsim: about 2 CPU seconds here). What the bound catches is work done before
#: refusing — a grid or a file built before it is counted — which takes tens of seconds or
#: never ends. CPU time, unlike wall time, does not grow with the machine's other work.
REFUSAL_EXTRA_CPU = 3.0
#: a child still running after this long is stuck (a FIFO with no writer, read): killed and
#: reported. Not a verdict on speed (that is the CPU bound), so generous for a loaded machine
HANG_SECONDS = 120


def _jobsim_child(argv: list[str], cwd: Path) -> tuple[int, float, float, str]:
    """``python -m jobsim ARGV`` in a child: its exit status (-9: killed as stuck), CPU
    seconds, peak resident memory in MB (the kernel's accounting of that child alone) and
    output."""
    import threading

    log = cwd / "log.txt"
    with open(log, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "jobsim", *argv], cwd=cwd,
                                stdin=subprocess.DEVNULL, stdout=f, stderr=f,
                                env={**os.environ, "JOBSIM_PROGRESS": "0"})
        killer = threading.Timer(HANG_SECONDS, proc.kill)
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        killer.cancel()
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    return (code, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,  # kB on Linux
            log.read_text(errors="replace"))


@pytest.mark.slow  # 44 CPU s: 19 children starting Python and jobsim
def test_every_listed_input_answers_exit_2_quickly_in_little_memory(tmp_path):
    """Each input in a child process: exit 2, a message, no traceback, within 3 CPU seconds
    more than a valid command's child takes (measured here, first) and with a peak resident
    memory under 500 MB."""
    code, base_cpu, _, text = _jobsim_child(["validate", str(LESSON)], tmp_path)
    assert code == 0, text
    bad, measured = [], {"(baseline) validate lesson.yaml": round(base_cpu, 2)}
    for name, argv in _cases(tmp_path).items():
        code, cpu, peak_mb, text = _jobsim_child(argv, tmp_path)
        measured[name] = (round(cpu, 2), round(peak_mb))
        if code == -signal.SIGKILL:
            bad.append(f"{name}: still running after {HANG_SECONDS} s, killed\n{text}")
        elif code != 2 or "Traceback" in text or not text.strip():
            bad.append(f"{name}: exit {code}\n{text}")
        elif cpu > base_cpu + REFUSAL_EXTRA_CPU or peak_mb > 500:
            bad.append(f"{name}: {cpu:.1f} CPU s (a valid command's: {base_cpu:.1f}), "
                       f"{peak_mb:.0f} MB")
    print(measured)  # shown with -s: the CPU seconds and peak memory of each
    assert not bad, "\n".join(bad)
    assert not (tmp_path / "out").exists() and not (tmp_path / "sw").exists()
