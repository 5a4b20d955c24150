"""SIGTERM, SIGHUP and Ctrl-C stop every command that writes as cleanly as each other: no
temporary folder or file left, no half-written file, a user's files untouched, what was kept
said in one line on stderr, and the exit status 128 + the signal's number.

Each test starts the command line as a child process whose one step is made to say that it
has been reached and then wait (for its stdin to close) — the report's temporary folder
filled but for its report.md, a sweep's or a hunt's first run cached, the page's temporary
file written — and sends the signal once the child says so: the signal comes at that
event, not after a sleep. If the child ignored the signal, closing its stdin lets it finish,
and the test fails on its exit status rather than hanging.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

from jobsim.base import signals as signals_mod
from jobsim.cli import main

LESSON = ROOT / "scenarios" / "lesson.yaml"
MARK = "jobsim-test: reached"

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="POSIX signals")

#: wait, once reached, for stdin to close (the test's signal should come first)
_PRELUDE = """
import sys
import time
from pathlib import Path
import {module} as target
real = target.{attr}
calls = [0]
def patched(*args, **kwargs):
    result = real(*args, **kwargs)
    calls[0] += 1
    if {condition}:
        print({mark!r}, file=sys.stderr, flush=True)
        sys.stdin.read()
    return result
target.{attr} = patched
from jobsim.cli import entry
sys.argv = ["jobsim", *{argv!r}]
entry()
"""


def _default_signals() -> None:
    """In the child: the signals as a fresh process from a terminal gets them (a test run in
    the background would hand down Ctrl-C ignored)."""
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def stop_at(argv: list[str], module: str, attr: str, signum: int, cwd: Path,
            condition: str = "True") -> tuple[int, str, str]:
    """Run ``jobsim ARGV`` in a child whose ``module.attr`` (a function) announces, once
    ``condition`` holds after a call, that it was reached, and waits; send ``signum`` then.
    The exit status, stdout and stderr (less the announcement)."""
    code = _PRELUDE.format(module=module, attr=attr, condition=condition, mark=MARK,
                           argv=argv)
    env = {**os.environ, "JOBSIM_PROGRESS": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=cwd, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=_default_signals)
    seen, reached = [], False
    try:
        for line in proc.stderr:  # until the child says it is there (or ends)
            if line.startswith(MARK):
                reached = True
                proc.send_signal(signum)
                break
            seen.append(line)
        out, err = proc.communicate()  # closes stdin: a child that ignored it goes on
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert reached, f"the child ended before {module}.{attr}:\n{''.join(seen)}"
    return proc.returncode, out, "".join(seen) + err


def leftovers(folder: Path) -> list[str]:
    """Temporary folders and files of jobsim's anywhere under ``folder``."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if ".tmp" in p.name)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


NAMES = {signal.SIGTERM: "SIGTERM", signal.SIGHUP: "SIGHUP", signal.SIGINT: "SIGINT (Ctrl-C)"}


# --- jobsim run ---------------------------------------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_run_writes_its_report_leaves_nothing(signum, tmp_path):
    """Stopped while its temporary folder is full but for report.md: the folder goes, and so
    do the folders made for it; exit 128 + N."""
    out = tmp_path / "made" / "for" / "it"
    status, _, err = stop_at(["run", str(LESSON), "--quiet", "--out", str(out)],
                             "jobsim.output.report", "markdown", signum, tmp_path)
    assert status == 128 + signum, err
    assert err.strip().splitlines()[-1] == (f"jobsim: stopped by {NAMES[signum]}; nothing "
                                            "was written")
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no temporary folder, no empty parents


def test_a_sigterm_while_run_replaces_a_report_keeps_the_old_one_and_the_users_files(
        tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    (out / "my notes.txt").write_text("mine\n", encoding="utf-8")
    capsys.readouterr()
    before = snapshot(tmp_path)
    status, _, err = stop_at(["run", str(LESSON), "--quiet", "--out", str(out), "--seed",
                              "5"], "jobsim.output.report", "markdown", signal.SIGTERM,
                             tmp_path)
    assert status == 143, err
    assert err.strip().splitlines()[-1] == (f"jobsim: stopped by SIGTERM; nothing was "
                                            f"written ({out} is as it was)")
    assert snapshot(tmp_path) == before and leftovers(tmp_path) == []


def test_a_sigterm_while_run_simulates_writes_nothing(tmp_path):
    status, _, err = stop_at(["run", str(LESSON), "--quiet", "--out", str(tmp_path / "o")],
                             "jobsim.output.runs", "analyse", signal.SIGTERM, tmp_path)
    assert status == 143 and "nothing was written" in err.splitlines()[-1], err
    assert list(tmp_path.iterdir()) == []


def test_a_what_if_run_stopped_takes_its_scratch_folders_away(tmp_path):
    """The default folder of a what-if run is made under reports/_scratch with a .gitignore:
    a stop before the report is written leaves neither."""
    status, _, err = stop_at(["run", str(LESSON), "--quiet", "--seed", "3"],
                             "jobsim.output.report", "markdown", signal.SIGTERM, tmp_path)
    assert status == 143, err
    assert list(tmp_path.iterdir()) == []


# --- jobsim sweep and jobsim hunt ----------------------------------------------------------------

def _cache_ok(folder: Path) -> list[Path]:
    """The cache entries, each checked whole (as the sweep reads them)."""
    import json

    from jobsim.tools.sweep import ENTRY_KEYS, row_sha256

    entries = sorted((folder / "cache").glob("*.json"))
    for p in entries:
        entry = json.loads(p.read_text(encoding="utf-8"))
        assert set(entry) == ENTRY_KEYS and entry["row_sha256"] == row_sha256(entry["row"])
    return entries


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_signal_stops_a_sweep_keeping_only_whole_cached_runs(signum, tmp_path):
    out = tmp_path / "s"
    status, _, err = stop_at(["sweep", str(LESSON), "--grid", "executor.lock_time=30s,60s",
                              "--replications", "2", "--workers", "1", "--out", str(out)],
                             "jobsim.tools.sweep.cache", "_Cache.put", signum, tmp_path,
                             condition="calls[0] == 1")
    assert status == 128 + signum, err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"jobsim: stopped by {NAMES[signum]}; the sweep's worker "
                           f"processes ended; the runs that finished are cached in {out}/cache")
    assert len(_cache_ok(out)) == 1 and leftovers(tmp_path) == []
    assert not (out / "sweep.md").exists() and "Traceback" not in err


def test_a_sigterm_stops_a_hunt_keeping_only_whole_cached_runs(tmp_path):
    out = tmp_path / "h"
    status, _, err = stop_at(["hunt", str(LESSON), "--break", "liveness", "--budget", "8",
                              "--workers", "1", "--out", str(out)],
                             "jobsim.tools.sweep.cache", "_Cache.put", signal.SIGTERM,
                             tmp_path, condition="calls[0] == 2")
    assert status == 143, err
    assert err.strip().splitlines()[-1].startswith(
        "jobsim: stopped by SIGTERM; the hunt's worker processes ended; the runs that "
        f"finished are cached in {out}/cache")
    assert len(_cache_ok(out)) == 2 and leftovers(tmp_path) == []
    assert not (out / "hunt.md").exists() and "Traceback" not in err


# --- jobsim view and jobsim reports -------------------------------------------------------------

def test_a_sigterm_while_view_writes_its_page_leaves_the_old_page(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", str(LESSON), "--quiet", "--out", str(out)]) == 0
    capsys.readouterr()
    before = snapshot(tmp_path)
    status, _, err = stop_at(["view", str(out)], "pathlib", "Path.write_text", signal.SIGTERM,
                             tmp_path, condition="args[0].name.startswith('.view.html.')")
    assert status == 143, err
    assert err.strip().splitlines()[-1] == (f"jobsim: stopped by SIGTERM; nothing was "
                                            f"written ({out / 'view.html'} is as it was)")
    assert snapshot(tmp_path) == before and leftovers(tmp_path) == []


@pytest.mark.slow  # 8 CPU s: jobsim reports over several scenarios in a child
def test_a_sigterm_during_reports_keeps_the_reports_written_whole(tmp_path):
    folder = tmp_path / "scenarios"
    folder.mkdir()
    for name in ("lesson", "polling_vs_notify"):
        shutil.copy(ROOT / "scenarios" / f"{name}.yaml", folder / f"{name}.yaml")
    out = tmp_path / "reports"
    status, stdout, err = stop_at(["reports", str(folder), "--out", str(out)],
                                  "jobsim.output.report", "markdown", signal.SIGTERM,
                                  tmp_path, condition="calls[0] == 2")
    assert status == 143, err
    assert stdout.startswith("ok     lesson.yaml → ")
    assert err.strip().splitlines()[-1] == (
        "jobsim: stopped by SIGTERM; the reports of lesson.yaml were written whole; "
        "polling_vs_notify.yaml's was not written")
    assert sorted(p.name for p in out.iterdir()) == ["lesson"]
    assert (out / "lesson" / "report.md").is_file() and leftovers(tmp_path) == []


def test_a_sigterm_while_race_writes_its_plot_leaves_no_png(tmp_path):
    """The races ran against a real SQLite file; the plot's temporary file is written when
    the signal comes: neither it nor a half-written PNG is left."""
    png = tmp_path / "race.png"
    status, _, err = stop_at(["race", "--db", f"sqlite:{tmp_path / 'race.db'}", "--strategy",
                              "guarded_update", "--workers", "2", "--jobs", "40", "--plot",
                              str(png)], "jobsim.output.plots", "save", signal.SIGTERM,
                             tmp_path)
    assert status == 143, err
    assert "stopped by SIGTERM" in err.strip().splitlines()[-1]
    assert not png.exists() and leftovers(tmp_path) == []


# --- the mechanism ------------------------------------------------------------------------------

def test_a_signal_inside_a_held_step_stops_at_its_end():
    """``held()``: a step that must be whole (a report's swap) finishes, then the stop."""
    done = []
    before = signal.getsignal(signal.SIGTERM)
    with signals_mod.stopping_cleanly():
        with pytest.raises(signals_mod.Stopped) as info:
            with signals_mod.held():
                os.kill(os.getpid(), signal.SIGTERM)
                done.append("the rest of the step")
        assert done == ["the rest of the step"] and info.value.signum == signal.SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)  # a second signal during the clean-up: ignored
        done.append("the clean-up")
    assert done[-1] == "the clean-up"
    assert signal.getsignal(signal.SIGTERM) == before  # the handlers before are back


def _stuck_in_c(said) -> None:
    """Say so, then block in C for good, where no Python signal handler can ever run: a
    glibc mutex locked twice (``pthread_mutex_lock`` is not interrupted by signals)."""
    import ctypes

    libc = ctypes.CDLL(None)
    mutex = ctypes.create_string_buffer(64)  # zeroed: PTHREAD_MUTEX_INITIALIZER
    libc.pthread_mutex_lock(mutex)
    said.send(True)
    libc.pthread_mutex_lock(mutex)


@pytest.mark.skipif(not hasattr(os, "register_at_fork") or sys.platform != "linux",
                    reason="fork and glibc")
def test_a_child_forked_while_stopping_cleanly_dies_of_sigterm_even_stuck_in_c():
    """A pool's worker forked from a command (its handlers set) must end on the pool's
    SIGTERM even where its main thread never runs bytecode again (a lock another thread held
    at the fork): CI saw a calibration's ``Pool.terminate`` wait on such a worker for ever."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    with signals_mod.stopping_cleanly():
        assert signal.getsignal(signal.SIGTERM) is signals_mod._handler
        hear, said = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_stuck_in_c, args=(said,))
        child.start()
        assert hear.recv()
        time.sleep(0.2)  # into the second lock (were it not yet, the test would only be weaker)
        child.terminate()
        child.join(60)  # a guard against a hang, not a speed limit: it dies at once
        if child.exitcode is None:
            child.kill()
            child.join()
            pytest.fail("the forked child ignored SIGTERM (its handler was the parent's)")
    assert child.exitcode == -signal.SIGTERM


def test_statuses_and_names():
    assert signals_mod.status_of(signals_mod.Stopped(signal.SIGTERM)) == 143
    assert signals_mod.status_of(signals_mod.Stopped(signal.SIGHUP)) == 129
    assert signals_mod.status_of(KeyboardInterrupt()) == 130
    assert signals_mod.name_of(KeyboardInterrupt()) == "SIGINT (Ctrl-C)"


def test_a_stop_a_finalizer_swallowed_is_raised_again(capsys):
    """A signal handled while a finalizer runs (a weak reference's callback, a ``__del__``)
    raised ``Stopped`` where Python prints it and goes on: a Ctrl-C sent to a run's process
    group during its report was lost so about once in 12 tries, the run went on to exit 0,
    and every later Ctrl-C or SIGTERM was ignored. The stop is raised again, quietly."""
    import weakref

    class Thing:
        pass

    def died(ref: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # handled at this callback's next bytecode
        for _ in range(1000):
            pass

    hook, alarm = sys.unraisablehook, signal.getsignal(signal.SIGALRM)
    with signals_mod.stopping_cleanly():
        with pytest.raises(signals_mod.Stopped) as info:
            thing = Thing()
            ref = weakref.ref(thing, died)
            del thing
            for _ in range(500):  # raised again within 10 ms: 5 s is a guard, not a limit
                time.sleep(0.01)
        assert info.value.signum == signal.SIGINT and ref() is None
    assert "Exception ignored" not in capsys.readouterr().err
    assert sys.unraisablehook is hook and signal.getsignal(signal.SIGALRM) == alarm


def _swallowed_stop() -> None:
    """A Ctrl-C handled inside a weak reference's callback (Python drops what it raises)."""
    import weakref

    class Thing:
        pass

    def died(ref: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass

    thing = Thing()
    ref = weakref.ref(thing, died)
    del thing
    assert ref() is None


def test_a_stop_swallowed_as_the_block_ends_is_raised_at_its_end(capsys, monkeypatch):
    """Swallowed in the block's last instant, before the thread sent it again: it was
    dropped without a word, and the command ended with exit 0."""
    with pytest.raises(signals_mod.Stopped) as info:
        with signals_mod.stopping_cleanly():
            _swallowed_stop()
    assert info.value.signum == signal.SIGINT
    assert "Exception ignored" not in capsys.readouterr().err

    from jobsim import cli

    def command(_args: object) -> int:  # a command done, a stop swallowed at its end
        _swallowed_stop()
        return 0

    monkeypatch.setattr(cli, "_dispatch", command)
    assert main(["list"]) == 130
    assert capsys.readouterr().err.strip().endswith(
        "stopped by SIGINT (Ctrl-C); nothing half-written was left")


def test_nested_blocks_pass_other_errors_on_once(monkeypatch):
    """Nested (``cli.main`` called from a program that stops cleanly itself), the inner
    block took the outer one's hook as the one before it, and an error in a finalizer went
    round the hook until a RecursionError."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)

    class Broken:
        def __del__(self):
            raise ValueError("in a finalizer")

    with signals_mod.stopping_cleanly():
        with signals_mod.stopping_cleanly():
            Broken()
        assert sys.unraisablehook is signals_mod._unraisable
    assert [type(u.exc_value) for u in seen] == [ValueError]
    assert sys.unraisablehook == seen.append


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="POSIX timers")
def test_a_stop_raised_again_leaves_the_callers_alarm_alone():
    """The caller's own SIGALRM timer and handler (a watchdog, pytest-timeout) go on as
    they were: the stop is sent again by a thread, not by a timer of the process's own."""
    fired = []
    before = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 3600.0)
        with signals_mod.stopping_cleanly():
            with pytest.raises(signals_mod.Stopped):
                _swallowed_stop()
                for _ in range(500):  # raised again within 10 ms: 5 s is a guard
                    time.sleep(0.01)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert left > 0 and fired == []  # still armed: not replaced, not cancelled
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
