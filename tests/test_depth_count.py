"""The rows in the table that the depth figures and the page draw: each job counted in from
its creation (and back from an operator's retry of it), out once at its end. An operator's
cancel of a failed task, already out, is no second step; the count never goes below zero and
ends at the summary's pending jobs (shipped scenarios with operators, fuzzed ones at fixed
and fresh seeds, printed for a replay)."""

import secrets

import numpy as np
import pytest

import fuzzgen
from conftest import SCENARIOS
from jobsim.analysis.metrics import trace_frame
from jobsim.base.trace import K, Trace
from jobsim.format import scenario
from jobsim.output import plots
from jobsim.output.plotdata import table_steps
from jobsim.output.report import analyse
from jobsim.sim.world import run


def _level(df):
    t, d = table_steps(df)
    return t, np.cumsum(d)


def test_a_retried_failed_job_comes_back_and_a_cancelled_one_leaves_once():
    tr = Trace()
    n = tr.node("n")
    for job in (1, 2, 3):
        tr.add(0.0, K["job_created"], job=job, x=0.0, text=tr.text("work"))
    tr.add(1.0, K["dead_lettered"], n, 1, 1, a=2)
    tr.add(1.0, K["dead_lettered"], n, 2, 1, a=2)
    tr.add(5.0, K["revived"], job=1, a=1)  # an operator's retry: back in the table
    tr.add(6.0, K["completed"], n, 1, 2, a=1)
    tr.add(7.0, K["cancelled"], job=2)  # a failed task's cancel: it was out already
    t, level = _level(trace_frame(tr))
    assert t.tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 5.0, 6.0]
    assert level.tolist() == [1, 2, 3, 2, 1, 2, 1]  # job 3 is left, waiting
    fig = plots.table_depth(trace_frame(tr))
    (table,) = [ln for ln in fig.axes[0].lines if ln.get_label().startswith("in the table")]
    assert table.get_label() == ("in the table (created + revived − done − dead-lettered − "
                                 "withdrawn − cancelled)")
    assert "1 left at the end" in fig.axes[0].get_title()
    # its mean over the run, each level weighted by how long it held, by hand: 3 rows for
    # 1 s, 1 for 4 s, 2 for 1 s, 1 for 1 s, over 7 s
    assert "at most 3 in the table (mean 1.4), " in fig.axes[0].get_title()


@pytest.mark.parametrize("name", ["failsafe", "flowable"])
def test_the_count_ends_at_the_pending_jobs_where_operators_act(name):
    """Both retry failed jobs and cancel one (the count went to -2 and -1 before)."""
    for sc in scenario.load_variants(SCENARIOS / f"{name}.yaml"):
        _holds(sc, f"{name}/{sc.variant}")


def _holds(sc, what):
    a = analyse(run(sc))
    _, level = _level(trace_frame(a.result.trace))
    end = int(level[-1]) if len(level) else 0
    assert end == a.summary["jobs"]["pending"], (what, end, a.summary["jobs"])
    assert not len(level) or level.min() >= 0, what


def _fuzzed(seed):
    for sc in fuzzgen.built(seed):
        _holds(sc, f"fuzz seed {seed} variant {sc.variant}")


@pytest.mark.parametrize("seed", [5, 17, 42])
def test_the_count_ends_at_the_pending_jobs_of_fuzzed_scenarios(seed):
    _fuzzed(seed)


def test_the_count_ends_at_the_pending_jobs_of_freshly_fuzzed_scenarios():
    for _ in range(3):
        _fuzzed(secrets.randbelow(2 ** 31))


@pytest.mark.slow
@pytest.mark.parametrize("block", range(4))
def test_the_count_ends_at_the_pending_jobs_of_many_freshly_fuzzed_scenarios(block):
    for _ in range(25):
        _fuzzed(secrets.randbelow(2 ** 31))
