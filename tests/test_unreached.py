"""What the file scheduled after the run's end never happened, and the summary and report.md
say so: a run until drained ends with its last job, and a crash or an outage set later is
not tested at all (a reader would believe it was)."""

from __future__ import annotations

from jobsim.analysis.unreached import unreached
from jobsim.format import scenario
from jobsim.output.report import analyse, format_summary, write
from jobsim.sim.world import run

DOC = """
name: late_faults
seed: 1
until: drained
executor: {{poll_interval: 1s, threads: 2, lock_time: 30s}}
nodes: 2
services:
  erp:
    latency: 20ms
    outages: [{{at: {outage}, for: 1m}}]
    brownouts: [{{at: 5s, for: 10s, latency_factor: 2}}]
handlers:
  work: {{calls: [{{work: 100ms}}, {{service: erp, timeout: 1s}}]}}
workload: {{streams: [{{handler: work, count: 40, rate: 2/s}}]}}
faults:
  - {{at: 3s, crash: node-1, restart_after: 5s}}
  - {{at: {crash}, crash: node-2}}
"""


def test_faults_and_outages_after_a_drained_run_are_named_in_the_summary_and_report(
        tmp_path):
    a = analyse(run(scenario.loads(DOC.format(outage="2h", crash="3h"))))
    end = a.summary["end_time"]
    assert a.summary["drained"] and end < 60
    assert unreached(a.result.scenario, end) == [
        "faults[1] (crash node-2 at 3h)", "services.erp.outages[0] (outage at 2h)"]
    (line,) = [x for x in format_summary(a) if "never happened" in x]
    assert line.startswith("WARNING      faults[1] (crash node-2 at 3h) and "
                           "services.erp.outages[0] (outage at 2h) never happened: the run "
                           "drained at ") and line.endswith(", before them")
    text = (write(a, tmp_path / "r", with_plots=False) / "report.md").read_text("utf-8")
    assert "> ⚠ **Scheduled after the end:** faults[1] (crash node-2 at 3h) and " \
        "services.erp.outages[0] (outage at 2h) never happened" in text


def test_what_happened_in_the_run_is_not_named():
    a = analyse(run(scenario.loads(DOC.format(outage="4s", crash="6s"))))
    assert unreached(a.result.scenario, a.summary["end_time"]) == []
    assert not [x for x in format_summary(a) if "never happened" in x]
    one = analyse(run(scenario.loads(DOC.format(outage="4s", crash="3h"))))
    (line,) = [x for x in format_summary(one) if "never happened" in x]
    assert "faults[1] (crash node-2 at 3h) never happened" in line and line.endswith("before it")


def test_a_long_storys_first_line_counts_outages_and_dead_letters_apart():
    """The first line of a long story counts a service's outages and brown-outs with the
    crashes, and dead letters apart from incidents (it said 'dead letters or incidents' of a
    run that could have none); past the limit, the outage is still told."""
    from jobsim.analysis.narrative import narrate

    a = analyse(run(scenario.loads(DOC.format(outage="15s", crash="3h"))))
    lines = narrate(a.result.trace, limit=5)
    assert lines[0].startswith("in short: 1 crash, ") and "1 service outage" in lines[0] \
        and "1 brown-out" in lines[0] and "incident" not in lines[0], lines[0]
    assert any(line.startswith("  [erp] DOWN at t=15s") for line in lines), lines
