"""The experiments' answers, stated as numbers: the challenge and polling vs notify."""

from conftest import ROOT, SCENARIOS
from jobsim.format import scenario
from jobsim.cli import main
from jobsim.base.progress import Bar
from jobsim.output.report import analyse
from jobsim.sim.world import run


def _runs(name):
    return {sc.variant: analyse(run(sc)) for sc in scenario.load_variants(SCENARIOS / name)}


def test_the_challenge_urgent_timer_under_each_ordering():
    """One job duration (≈1 s) plus one poll interval (1 s): FIFO and the prefetch trap make
    the timer late by about the burst's length; priority and priority + aging keep it."""
    runs = _runs("challenge.yaml")
    delay = {v: a.summary["named"]["urgent"]["start_delay"] for v, a in runs.items()}
    assert delay["fifo"] > 10 and delay["prefetch"] > 10
    assert delay["priority"] <= 2 and delay["aging"] <= 2
    report = (ROOT / "reports" / "challenge" / "report.md").read_text()
    assert "| urgent: start delay |" in report  # side by side, one column per variant


def test_polling_adds_half_the_interval_notify_nothing():
    runs = _runs("polling_vs_notify.yaml")
    polling = runs["polling"].summary["latency"]["start_delay"]["mean"]
    notify = runs["notify"].summary["latency"]["start_delay"]["mean"]
    assert abs(polling - 1.0) <= 0.2 * 1.0
    assert notify < 0.05 * 2.0


def test_strict_priority_starves_and_aging_bounds_the_wait():
    runs = _runs("priority_starvation.yaml")
    low = {v: a.summary["latency"]["by_priority"]["0"]["start_delay"]["max"]
           for v, a in runs.items()}
    assert low["strict"] > 2 * low["aging"]


def test_off_a_terminal_progress_is_whole_lines(tmp_path, capsys, monkeypatch):
    """A log gets a line per phase (tests/test_progress_lines.py holds which), never a bar's
    carriage returns or cursor moves."""
    monkeypatch.delenv("JOBSIM_PROGRESS", raising=False)
    assert main(["run", str(SCENARIOS / "lesson.yaml"), "--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert err and "\r" not in err and "\x1b" not in err


def test_the_progress_bar_draws_and_clears():
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    bar = Bar(100, "race", unit="%", stream=term)
    bar.set(50, "t=100s")
    bar.bar.refresh()
    bar.close()
    err = term.getvalue()
    assert "race:" in err and "50%" in err and err.endswith("\r")
