"""The retry schedule each job followed, in the per-job table (``retry_delays`` in
jobs.csv) and in the report's "Retry schedules"."""

import numpy as np
import pandas as pd

import jobsim
from jobsim.format import scenario
from jobsim.analysis.schedules import digest, retry_delays, schedule_column


def _doc(backoff, handlers=None, count=0, jobs=(), attempts=4, **extra):
    workload = {"jobs": list(jobs)}
    if count:
        workload["streams"] = [{"name": "burst", "handler": "bad", "count": count}]
    return {"name": "schedules", "seed": 2, "until": "drained",
            "executor": {"wakeup": "notify", "threads": 64, "batch_size": 100,
                         "retry": {"attempts": attempts, "backoff": backoff}},
            "nodes": 1,
            "handlers": handlers or {"bad": {"duration": "10ms", "outcome": "always_fail"},
                                     "twice": {"duration": "10ms",
                                               "outcome": {"fail_first": 2}},
                                     "ok": {"duration": "10ms"}},
            "workload": workload, **extra}


def _analyse(doc):
    return jobsim.analyse(jobsim.run(jobsim.from_dict(doc)))


def test_each_job_lists_the_delays_it_waited():
    a = _analyse(_doc(["10s", "60s", "300s"], jobs=[
        {"name": "bad", "handler": "bad"}, {"name": "twice", "handler": "twice"},
        {"name": "ok", "handler": "ok"}]))
    jobs = jobsim.jobs_frame(a.histories).set_index("name")
    assert jobs.columns[-1] == "retry_delays"
    assert jobs.loc["bad", "retry_delays"] == "10s 60s 300s"
    assert jobs.loc["twice", "retry_delays"] == "10s 60s"
    assert jobs.loc["ok", "retry_delays"] == ""
    assert a.histories.jobs[1].retry_delays == [10.0, 60.0, 300.0]


def test_the_delays_are_the_traces_own_read_at_once():
    """The columnar reading gives what a plain walk over the trace's events gives."""
    r = jobsim.run(jobsim.from_dict(_doc(
        {"exponential": {"base": "1s", "cap": "1m", "jitter": "full"}}, count=60,
        attempts=6)))
    df = jobsim.trace_frame(r.trace)
    walk: dict[int, list[float]] = {}
    for row in df[df["kind"] == "retry_scheduled"].itertuples():
        walk.setdefault(row.job, []).append(row.x - row.time)
    assert retry_delays(r.trace) == walk and len(walk) == 60


def test_a_schedule_is_spelled_to_the_millisecond():
    assert schedule_column([[10.0, 60.0000000001, 3600.0], [], [0.01749, 4.7566, np.inf]]) == [
        "10s 60s 1h", "", "17ms 4.757s forever"]
    assert schedule_column([]) == []


def test_jobs_csv_has_the_column(tmp_path):
    a = _analyse(_doc(["10s", "60s"], jobs=[{"handler": "bad"}, {"handler": "ok"}]))
    jobsim.write(a, tmp_path / "out", with_plots=False)
    jobs = pd.read_csv(tmp_path / "out" / "jobs.csv", keep_default_na=False)
    assert jobs["retry_delays"].tolist() == ["10s 60s 60s", ""]


def _section(text: str) -> str:
    if "## Retry schedules" not in text:
        return ""
    return text.split("## Retry schedules", 1)[1].split("\n## ", 1)[0]


def test_the_report_lists_the_distinct_schedules_and_their_jobs(tmp_path):
    a = _analyse(_doc(["10s", "60s", "300s"], jobs=[{"handler": "bad"}] * 3
                      + [{"handler": "twice"}] * 2 + [{"handler": "ok"}]))
    jobsim.write(a, tmp_path / "out", with_plots=False)
    section = _section((tmp_path / "out" / "report.md").read_text(encoding="utf-8"))
    assert "| 3 | 10s 60s 300s |\n| 2 | 10s 60s |" in section
    assert "more schedule" not in section


def test_no_retries_no_section(tmp_path):
    a = _analyse(_doc(["10s"], jobs=[{"handler": "ok"}] * 3))
    assert digest(a.histories) == []
    jobsim.write(a, tmp_path / "out", with_plots=False)
    assert _section((tmp_path / "out" / "report.md").read_text(encoding="utf-8")) == ""


def test_jittered_schedules_are_summed_up_by_retry():
    a = _analyse(_doc({"exponential": {"base": "10s", "factor": 1, "jitter": "full"}},
                      count=100, attempts=3))
    lines = digest(a.histories)
    # a list of five schedules of one job each would say nothing: the delays by retry alone
    assert lines[0] == ("Every job's schedule is its own (100 retried jobs: a jittered "
                        "backoff). By retry:")
    by_retry = [line for line in lines if line.startswith(("| 1 |", "| 2 |"))]
    # every job failed twice: 100 first retries and 100 second ones, within 0..10 s
    assert [line.split(" | ")[:2] for line in by_retry] == [["| 1", "100"], ["| 2", "100"]]
    assert len(lines) < 20


def test_many_schedules_followed_by_many_jobs_are_listed_then_summed_up():
    """Past ``SHOWN`` schedules the most common are listed and the rest counted, with
    separators; only where the most common is one job's in a hundred or fewer is the list
    left out (a jittered backoff's)."""
    from types import SimpleNamespace

    groups = {f"{k}s": [float(k), 2.0 * k] for k in range(1, 9)}  # 8 schedules
    delays = {j: groups[f"{1 + j % 8}s"] for j in range(1, 2001)}  # 250 jobs each
    lines = digest(SimpleNamespace(delays=delays))
    assert lines[:3] == ["| jobs | retry delays |", "|---:|---|", "| 250 | 1s 2s |"]
    assert "… and 3 more schedules (750 jobs). By retry:" in lines
    assert "| 1 | 2,000 | 1s | 4.5s | 8s |" in lines
    scattered = {j: [1.0 + (j // 2) / 1000.0] for j in range(1, 2001)}  # 2 jobs each
    lines = digest(SimpleNamespace(delays=scattered))
    assert lines[0] == ("Nearly every job's schedule is its own (1,001 schedules among 2,000 "
                        "retried jobs, none followed by more than 2: a jittered backoff). "
                        "By retry:")


def test_the_report_names_each_variant_that_retried(tmp_path):
    doc = _doc(["10s"], jobs=[{"handler": "twice"}],
               variants={"plain": {}, "none_fail": {"set": {
                   "handlers.twice.outcome": "succeed"}}})
    runs = [sc for sc in scenario.variants_of(doc) if sc.variant is not None]
    analyses = [jobsim.analyse(jobsim.run(sc)) for sc in runs]
    jobsim.write(analyses, tmp_path / "out", with_plots=False)
    section = _section((tmp_path / "out" / "report.md").read_text(encoding="utf-8"))
    assert "### plain" in section and "| 1 | 10s 10s |" in section
    assert "### none_fail" not in section
