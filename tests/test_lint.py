"""Warnings for known traps (``jobsim/format/lint.py``): each through the real command line, one
scenario that triggers it and one close to it that does not; ``--strict`` makes them errors
(exit 2, nothing run or written); without it the run happens, its trace untouched."""

import copy
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from jobsim.base import dists
from jobsim.cli import main
from jobsim.format import scenario as scenario_mod
from jobsim.format.lint import lint, lint_runs, p99
from jobsim.sim.world import run

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

BASE = {
    "name": "traps", "seed": 1, "until": "drained",
    "executor": {"acquisition": "guarded_update", "wakeup": "poll", "poll_interval": "1s",
                 "batch_size": 2, "queue_size": 2, "threads": 2, "lock_time": "1m"},
    "nodes": 2,
    "handlers": {"work": {"duration": "1s"}},
    "workload": {"streams": [{"name": "s", "handler": "work", "count": 6}]},
}


def doc(executor: dict | None = None, **top) -> dict:
    """The base scenario with executor keys set (None: removed) and top-level keys replaced."""
    d = copy.deepcopy(BASE)
    for k, v in (executor or {}).items():
        if v is None:
            d["executor"].pop(k, None)
        else:
            d["executor"][k] = v
    d.update(top)
    return d


def write(tmp_path: Path, d: dict, name: str = "traps.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(d, sort_keys=False), encoding="utf-8")
    return path


def validate(tmp_path, capsys, d: dict, *flags: str) -> tuple[int, str, str, Path]:
    path = write(tmp_path, d)
    status = main(["validate", str(path), *flags])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    return status, captured.out, captured.err, path


def warnings_of(d: dict) -> list:
    return lint(scenario_mod.from_dict(d))


LOGNORMAL = {"work": {"duration": {"lognormal": {"median": "3s", "p99": "60s"}}}}
SLOW_BURST = {"executor": {"threads": 1, "queue_size": 20, "batch_size": 20},
              "nodes": 1, "handlers": {"work": {"duration": "10s"}},
              "workload": {"streams": [{"name": "s", "handler": "work", "count": 30}]}}
TICKS = {"clock": {"ticks": [{"at": "0s", "nodes": ["node-1", "node-2"]},
                             {"at": "10s", "nodes": ["node-1", "node-2"]}]}}

#: a schedule whose runs always fail, beside the stream
SCHEDULE_FAILS = {"handlers": {"work": {"duration": "1s"},
                               "report": {"duration": "1s", "outcome": "always_fail"}},
                  "workload": {"streams": [{"name": "s", "handler": "work", "count": 6}],
                               "recurring": [{"name": "nightly", "handler": "report",
                                              "every": "1m", "count": 3}]}}

#: code → (path, a scenario that triggers it, one close to it that does not)
CASES = {
    "lock-shorter-than-run": (
        "executor.lock_time",
        doc({"lock_time": "30s"}, handlers=LOGNORMAL),
        doc({"lock_time": "30s", "heartbeat": "10s"}, handlers=LOGNORMAL)),
    "queue-outlives-lock": (
        "executor.queue_size",
        doc(SLOW_BURST["executor"], **{k: v for k, v in SLOW_BURST.items() if k != "executor"}),
        doc({**SLOW_BURST["executor"], "queue_size": 5, "batch_size": 5},
            **{k: v for k, v in SLOW_BURST.items() if k != "executor"})),
    "queue-full-wait-caps-intake": (  # one node: 14 jobs a 5 s wait against 4/s (2.5/s)
        "executor.queue_full_wait",
        doc({"queue_size": 10, "batch_size": 10, "threads": 4, "poll_interval": "10s",
             "lock_time": "5m"}, nodes=1, handlers={"work": {"duration": "500ms"}},
            workload={"streams": [{"name": "s", "handler": "work", "count": 500,
                                   "rate": "4/s"}]}),
        doc({"queue_size": 10, "batch_size": 10, "threads": 4, "poll_interval": "10s",
             "lock_time": "5m"}, nodes=1, handlers={"work": {"duration": "500ms"}},
            workload={"streams": [{"name": "s", "handler": "work", "count": 500,
                                   "rate": "2.5/s"}]})),
    "heartbeat-not-shorter-than-lock": (
        "executor.heartbeat", doc({"heartbeat": "1m"}), doc({"heartbeat": "20s"})),
    "poll-longer-than-lock": (
        "executor.poll_interval", doc({"poll_interval": "2m"}), doc({"poll_interval": "30s"})),
    "more-nodes-than-jobs": ("nodes", doc(nodes=8), doc(nodes=6)),
    "node-without-work": (
        "nodes[1].handles",
        doc(nodes=[{"name": "a", "handles": ["work"]}, {"name": "b", "handles": ["mail"]}],
            handlers={"work": {"duration": "1s"}, "mail": {"duration": "1s"}}),
        doc(nodes=[{"name": "a", "handles": ["work"]}, {"name": "b", "handles": ["mail"]}],
            handlers={"work": {"duration": "1s"}, "mail": {"duration": "1s"}},
            workload={"streams": [{"name": "s", "handler": "work", "count": 6},
                                  {"name": "m", "handler": "mail", "count": 2}]})),
    "work-without-node": (
        "handlers.mail",
        doc(nodes=[{"name": "a", "handles": ["work"]}, {"name": "b", "handles": ["work"]}],
            handlers={"work": {"duration": "1s"}, "mail": {"duration": "1s"}},
            workload={"streams": [{"name": "s", "handler": "work", "count": 6},
                                  {"name": "m", "handler": "mail", "count": 2}]}),
        doc(nodes=[{"name": "a", "handles": ["work"]}, {"name": "b", "handles": ["mail"]}],
            handlers={"work": {"duration": "1s"}, "mail": {"duration": "1s"}},
            workload={"streams": [{"name": "s", "handler": "work", "count": 6},
                                  {"name": "m", "handler": "mail", "count": 2}]})),
    "schedule-stops-on-failure": (
        "workload.recurring[0]",
        doc({"exhausted": "failed"}, **SCHEDULE_FAILS),
        doc({"exhausted": "failed"}, **SCHEDULE_FAILS,
            operations=[{"at": "5m", "retry": "nightly"}])),
}

#: a prefetching node that polls right after arrivals takes them all: 3 nodes of 5 threads,
#: 60 % loaded as a cluster but twice what one node runs — one node's queue of 30 outlives a
#: 60 s lock (measured: 489 duplicate runs from lock expiry, and no warning before)
# failsafe's v2 settings with a heartbeat over the running tasks only (failsafe's own covers
# the queued ones too: the preset's heartbeat_scope is held)
PREFETCH = {"name": "prefetch", "policy": "failsafe",
            "executor": {"lock_time": "60s", "heartbeat_scope": "running"},
            "nodes": 3, "handlers": {"mail": {"duration": {"lognormal": {
                "median": "20s", "p99": "90s"}}}},
            "workload": {"streams": [{"name": "m", "handler": "mail", "count": 300,
                                      "rate": "0.4/s"}]}}


def test_a_queue_one_node_fills_while_the_cluster_keeps_up_warns():
    assert [w.code for w in warnings_of(PREFETCH)] == ["queue-outlives-lock"]
    slow = copy.deepcopy(PREFETCH)
    slow["workload"]["streams"][0]["rate"] = "0.1/s"  # one node alone keeps up
    assert warnings_of(slow) == []
    held = copy.deepcopy(PREFETCH)
    held["executor"]["heartbeat_scope"] = "held"
    assert warnings_of(held) == []
    assert analyse_duplicates(PREFETCH) > 0 and analyse_duplicates(held) == 0


def analyse_duplicates(d: dict) -> int:
    from jobsim.output.report import analyse

    s = analyse(run(scenario_mod.from_dict(d))).summary
    return s["duplicate_executions"]["by_cause"]["lock_expired"]


def test_work_no_node_runs_is_not_warned_of_when_the_scenario_expects_it():
    d = copy.deepcopy(CASES["work-without-node"][1])
    d["expect"] = {"invariants.liveness": "== 1"}
    assert warnings_of(d) == []

#: setting → (a scenario that writes it where it has no effect, one where it has)
IGNORED = {
    "poll_interval": (doc({"wakeup": "ticks", "poll_interval": "5s"}, **TICKS),
                      doc({"wakeup": "poll", "poll_interval": "5s"})),
    "heartbeat_scope": (doc({"heartbeat_scope": "held"}),
                        doc({"heartbeat_scope": "held", "heartbeat": "20s"})),
    "heartbeat": (doc({"heartbeat": "20s", "lock_expiry": "never"}),
                  doc({"heartbeat": "20s", "lock_expiry": "claim"})),
    "reset_interval": (doc({"reset_interval": "1m"}),
                       doc({"reset_interval": "1m", "lock_expiry": "reset"})),
    "reset_page": (doc({"reset_page": 10}),
                   doc({"reset_page": 10, "reset_interval": "1m", "lock_expiry": "reset"})),
    "global_lock_wait": (doc({"global_lock_wait": "10s"}),
                         doc({"global_lock_wait": "10s", "global_lock": True})),
    "global_lock_force": (doc({"global_lock_force": "1m"}),
                          doc({"global_lock_force": "1m", "global_lock": True})),
    "queue_full_wait": (doc({"queue_full_wait": "2s", "queue_size": 0}),
                        doc({"queue_full_wait": "2s", "queue_size": 2})),
    "error_wait": (doc({"error_wait": "5s"}),
                   doc({"error_wait": "5s", "acquisition": "optimistic_batch"})),
    "batch_size": (doc({"batch_size": 10}), doc({"batch_size": 2})),
    "aging_rate": (doc({"aging_rate": 0.1}), doc({"aging_rate": 0.1, "order": "aging"})),
    "aging_from": (doc({"aging_from": "created"}),
                   doc({"aging_from": "created", "order": "aging"})),
    "hint": (doc({"hint": True}),
             doc({"hint": True}, workload={"streams": [
                 {"name": "s", "handler": "work", "count": 6, "nodes": ["node-1", "node-2"]}]})),
}


@pytest.mark.parametrize("code", list(CASES))
def test_each_warning_triggers_and_a_close_scenario_does_not(tmp_path, capsys, code):
    path_in_file, trigger, near = CASES[code]

    status, out, err, path = validate(tmp_path, capsys, trigger)
    assert status == 0, out + err
    assert f"{path}: ok" in out
    lines = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert [w.code for w in warnings_of(trigger)] == [code], err
    assert len(lines) == 1 and lines[0].startswith(f"warning: {path}: {path_in_file}: "), err
    assert "fix: " in lines[0]

    status, out, err, _ = validate(tmp_path, capsys, near)
    assert status == 0 and "warning" not in err, err


@pytest.mark.parametrize("setting", list(IGNORED))
def test_a_setting_without_effect_warns_and_one_with_effect_does_not(tmp_path, capsys, setting):
    trigger, near = IGNORED[setting]

    status, _, err, path = validate(tmp_path, capsys, trigger)
    assert status == 0
    assert f"warning: {path}: executor.{setting}: {setting} has no effect here: " in err, err
    assert "fix: " in err
    assert [w.code for w in warnings_of(trigger)] == ["ignored-setting"], err

    status, _, err, _ = validate(tmp_path, capsys, near)
    assert status == 0 and "warning" not in err, err


@pytest.mark.parametrize("setting", [s for s in IGNORED if s != "reset_interval"])
def test_a_setting_said_to_have_no_effect_leaves_the_trace_alone(setting):
    """The claim behind each ignored-setting rule, checked on the simulator: the run with the
    setting and the run without it have one trace. (A reset thread that can find nothing
    still issues its empty queries, so reset_interval is left out.)"""
    trigger = IGNORED[setting][0]
    without = copy.deepcopy(trigger)
    del without["executor"][setting]
    a, b = scenario_mod.from_dict(trigger), scenario_mod.from_dict(without)
    assert run(a).trace_sha256 == run(b).trace_sha256


# --- the rules' edges ---------------------------------------------------------------------------

@pytest.mark.parametrize("change", [
    {"lock_expiry": "never"},                       # nothing frees an expired lock
    {"lock_expiry": "reset"},                       # ... nor with no reset thread
    {"heartbeat": "10s", "heartbeat_scope": "held"},
])
def test_no_lock_warning_where_an_expired_lock_reruns_nothing(change):
    d = doc({"lock_time": "30s", **change}, handlers=LOGNORMAL)
    assert [w.code for w in warnings_of(d) if w.code != "ignored-setting"] == []


def test_a_reset_thread_makes_an_expired_lock_rerun():
    d = doc({"lock_time": "30s", "lock_expiry": "reset", "reset_interval": "1m"},
            handlers=LOGNORMAL)
    (w,) = warnings_of(d)
    assert w.code == "lock-shorter-than-run" and "the reset thread frees it" in w.message


def test_no_lock_warning_when_the_run_ends_before_any_lock_can_expire():
    assert warnings_of(doc({"lock_time": "30s"}, handlers=LOGNORMAL, until="20s")) == []


def test_a_hanging_handler_outruns_its_lock_on_purpose():
    d = doc({"lock_time": "30s"}, handlers={"work": {"outcome": {"hang": "10m"}}})
    assert warnings_of(d) == []


def test_a_deep_queue_fed_slower_than_it_drains_does_not_warn():
    slow = {k: v for k, v in SLOW_BURST.items() if k != "executor"}
    slow["workload"] = {"streams": [{"name": "s", "handler": "work", "count": 30,
                                     "rate": "1/m"}]}
    assert warnings_of(doc(SLOW_BURST["executor"], **slow)) == []


def test_a_standby_node_for_a_fault_is_not_idle():
    d = doc(nodes=8, faults=[{"at": "1s", "crash": "node-1"}])
    assert warnings_of(d) == []


def test_a_node_level_setting_is_named_by_its_node_and_others_name_their_nodes():
    d = doc({"lock_time": "30s"}, handlers=LOGNORMAL,
            nodes=[{"name": "a", "lock_time": "2m"}, {"name": "b"}, {"name": "c", "heartbeat": "5s"},
                   {"name": "d", "poll_interval": "3m"}])
    found = {(w.code, w.path): w.message for w in warnings_of(d)}
    assert set(found) == {("lock-shorter-than-run", "executor.lock_time"),
                          ("poll-longer-than-lock", "nodes[3].poll_interval")}
    assert found[("lock-shorter-than-run", "executor.lock_time")].startswith("(on b, d) ")


def test_variants_share_their_common_warnings_once_and_name_their_own():
    d = doc({"lock_time": "30s", "heartbeat": "10s", "reset_page": 5}, handlers=LOGNORMAL,
            variants={"beat": {}, "no_beat": {"set": {"executor.heartbeat": None}}})
    got = [(w.code, w.path) for w in lint_runs(scenario_mod.variants_of(d))]
    assert got == [("ignored-setting", "executor.reset_page"),
                   ("lock-shorter-than-run", "variants.no_beat → executor.lock_time")]


def test_p99_is_each_distributions_closed_form():
    rng = np.random.default_rng(12345)  # a local generator: no scenario stream is touched
    assert p99(dists.Constant(7.0)) == 7.0
    assert p99(dists.Uniform(10.0, 110.0)) == pytest.approx(109.0)
    assert p99(dists.LogNormal(3.0, 60.0)) == 60.0
    assert p99(dists.Exponential(2.0)) == pytest.approx(2.0 * math.log(100.0))
    sampled = np.quantile(rng.exponential(2.0, 200_000), 0.99)
    assert sampled == pytest.approx(p99(dists.Exponential(2.0)), rel=0.03)


# --- --strict, and a run with warnings ---------------------------------------------------------

def test_validate_lints_a_what_if_given_by_set(tmp_path, capsys):
    """``validate --set`` checks and warns of the file as ``run --set`` would run it: a
    queue of 10 on three polling nodes at 10 jobs/s caps what they take in; a path or value
    that is wrong is an error naming the --set, exit 2."""
    d = {"name": "w", "until": "drained", "nodes": 3,
         "handlers": {"work": {"duration": "500ms"}},
         "workload": {"streams": [{"name": "s", "handler": "work", "count": 3000,
                                   "rate": "10/s"}]}}
    status, out, err, path = validate(tmp_path, capsys, d)
    assert status == 0 and "queue_full_wait" not in err, err
    status, out, err, path = validate(tmp_path, capsys, d, "--set", "executor.queue_size=10")
    assert status == 0 and f"warning: {path}: executor.queue_full_wait: " in err, err
    status, out, err, path = validate(tmp_path, capsys, d, "--set", "executor.queue_sise=10")
    assert status == 2 and "--set executor.queue_sise: expected one of the keys" in out, out


def test_validate_strict_makes_a_warning_an_error(tmp_path, capsys):
    _, trigger, near = CASES["lock-shorter-than-run"]
    status, out, err, path = validate(tmp_path, capsys, trigger, "--strict")
    assert status == 2
    assert f"{path}: valid, but refused" in out and "--strict refuses 1 warning" in out
    assert f"error: {path}: executor.lock_time: the lock (30s) is shorter than the p99 run" \
        in err, err
    status, out, err, path = validate(tmp_path, capsys, near, "--strict")
    assert status == 0 and f"{path}: ok" in out and err == ""


def test_run_strict_refuses_before_running_or_writing(tmp_path, capsys):
    path = write(tmp_path, IGNORED["heartbeat_scope"][0])
    out = tmp_path / "out"
    status = main(["run", str(path), "--out", str(out), "--quiet", "--no-plots", "--strict"])
    captured = capsys.readouterr()
    assert status == 2
    assert "Traceback" not in captured.out + captured.err
    assert f"error: {path}: executor.heartbeat_scope: heartbeat_scope has no effect" \
        in captured.err
    assert "refused by --strict; nothing was run" in captured.err
    assert not out.exists() and captured.out == ""


def test_run_warns_then_runs_and_the_trace_is_the_one_without_lint(tmp_path, capsys):
    trigger = IGNORED["heartbeat_scope"][0]
    path = write(tmp_path, trigger)
    out = tmp_path / "out"
    status = main(["run", str(path), "--out", str(out), "--quiet", "--no-plots"])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    assert f"warning: {path}: executor.heartbeat_scope: " in captured.err
    assert (out / "report.md").is_file()
    summary = yaml.safe_load((out / "summary.json").read_text())
    assert summary["trace_sha256"] == run(scenario_mod.load(path)).trace_sha256


def test_run_strict_of_a_scenario_without_warnings_runs(tmp_path, capsys):
    path = write(tmp_path, BASE)
    status = main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet", "--no-plots",
                   "--strict"])
    captured = capsys.readouterr()
    assert status == 0 and captured.err == "", captured.err


def test_priorities_the_nodes_order_does_not_read_are_an_ignored_setting():
    """Jobs of two priorities under the default order (by id): the urgent one waits behind
    the rest as if it had none, said before the run with the fix; quiet where the order
    reads priorities or where every job has the same one."""
    d = copy.deepcopy(BASE)
    d["workload"] = {"jobs": [{"name": f"low-{i}", "handler": "work"} for i in range(3)] +
                     [{"name": "urgent", "handler": "work", "priority": 10}]}
    (w,) = [w for w in warnings_of(d) if w.code == "ignored-setting"]
    assert w.path == "workload.jobs[3].priority"
    assert w.message == (
        "priority has no effect here: the nodes take rows by id, the order they were created "
        "in (executor.order: id), whatever their priority (0 and 10): a job of priority 10 "
        "waits behind any of 0 taken before it as if it had none; fix: executor.order: "
        "priority (or aging), or leave the priorities out")
    for order in ("priority", "aging"):
        d["executor"]["order"] = order
        assert not [w for w in warnings_of(d) if w.code == "ignored-setting"], order
    d["executor"]["order"] = "due"
    d["workload"]["jobs"][3]["priority"] = 0
    assert not [w for w in warnings_of(d) if w.code == "ignored-setting"]


# --- the shipped scenarios ---------------------------------------------------------------------

#: the shipped scenarios that warn: each demonstrates the trap on purpose
SHIPPED = {
    ("executors_side_by_side", "lock-shorter-than-run",
     "variants.lesson → executor.lock_time"),
    ("failsafe", "lock-shorter-than-run", "variants.no_heartbeat → executor.heartbeat"),
    ("lock_expiry", "lock-shorter-than-run", "variants.no_heartbeat → executor.lock_time"),
    ("zeebe", "lock-shorter-than-run", "executor.lock_time"),
    # the FIFO it shows on purpose: the urgent timer waits behind the 100 others
    ("challenge", "ignored-setting", "variants.fifo → workload.jobs[0].priority"),
    # and the prefetch it shows on purpose: the timer claimed behind a queue it cannot jump
    ("challenge", "priority-behind-local-queue", "variants.prefetch → executor.queue_size"),
    ("challenge", "priority-behind-local-queue", "variants.lesson → executor.queue_size"),
    # the double charges it shows on purpose: the timeouts and the fast clock
    ("double_charges", "ambiguous-timeout", "variants.none → handlers.charge.calls[1]"),
    ("double_charges", "ambiguous-timeout", "variants.fencing → handlers.charge.calls[1]"),
    ("double_charges", "clock-skew", "nodes[2].clock_offset"),
    # the retries it shows on purpose: a fixed 10 s backoff used up inside the outage
    ("retry_storm", "retries-inside-outage", "variants.fixed → executor.retry"),
}


def test_shipped_scenarios_warn_only_where_they_show_a_trap_on_purpose():
    got = {(f.stem, w.code, w.path) for f in sorted(SCENARIOS.glob("*.yaml"))
           for w in lint_runs(scenario_mod.load_variants(f))}
    assert got == SHIPPED


def test_a_queue_wait_and_a_run_that_each_fit_the_lock_but_not_together_are_a_trap():
    """node_crash with a 10 s lock: its p99 run (9.2 s) fits, and so does the wait behind
    six queued jobs (6 s), but a job that waits and then runs holds its row 15 s: it runs
    twice — said before the run, with the sum and the fixes."""
    from jobsim.format.scenario import load_variants

    runs = load_variants(SCENARIOS / "node_crash.yaml",
                         sets=["executor.lock_time=10s"])
    found = [w for w in lint_runs(runs) if w.code == "queue-and-run-outlive-lock"]
    assert len(found) == 1 and "holds its row for 15.2s" in found[0].message
    assert not [w for w in lint_runs(load_variants(SCENARIOS / "node_crash.yaml"))
                if w.code == "queue-and-run-outlive-lock"]


def test_a_global_lock_some_nodes_take_and_others_do_not_is_warned_about():
    """Under the global lock a node claims with a bulk UPDATE and no version check: it takes
    rows that nodes claiming without the lock have just locked (found by the fuzz)."""
    from jobsim.format.scenario import loads

    text = """
name: mixed_lock
db: {latency: 1ms}
nodes: [{name: a}, {name: b, global_lock: true}]
handlers: {w: {duration: 1s}}
workload: {jobs: [{handler: w}, {handler: w}]}
"""
    (w,) = [w for w in lint(loads(text)) if w.code == "mixed-global-lock"]
    assert w.path == "nodes[1].global_lock" and "only b takes" in w.message
    every = text.replace("{name: a}", "{name: a, global_lock: true}")
    assert not [w for w in lint(loads(every)) if w.code == "mixed-global-lock"]


P30D = """
name: p30d
nodes: 1
executor: {timer_table: true}
handlers:
  task: {duration: 1s, boundary_timer: {after: P30D, interrupting: true}}
  later: {duration: 1s}
workload:
  jobs: [{handler: task, at: 0s}, {handler: later, at: 1h, due_in: 30d, kind: timer}]
"""


def test_a_timer_or_boundary_timer_due_at_the_horizon_is_warned_of(tmp_path, capsys):
    """Flowable's P30D boundary timer under the default 30-day horizon never fires, and a
    timer created at 1 h and due 30 days later never runs: the run said only '0 fired'."""
    sc = scenario_mod.loads(P30D)
    found = {w.path: w.message for w in lint(sc) if w.code == "due-after-the-end"}
    assert set(found) == {"workload.jobs[1].due_in", "handlers.task.boundary_timer.after"}
    assert "(horizon: 30d)" in found["handlers.task.boundary_timer.after"]
    assert "fix: a shorter due_in, or a later horizon" in found["workload.jobs[1].due_in"]
    # a day shorter, or a horizon a day longer: no warning
    for text in (P30D.replace("P30D", "P29D").replace("due_in: 30d", "due_in: 29d"),
                 P30D.replace("name: p30d", "name: p30d\nhorizon: 31d")):
        assert not [w for w in lint(scenario_mod.loads(text)) if w.code == "due-after-the-end"]
    path = tmp_path / "p30d.yaml"
    path.write_text(P30D, encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    assert "handlers.task.boundary_timer.after: its boundary timer" in capsys.readouterr().err


URGENT_BEHIND_QUEUE = """
name: starve
seed: 7
until: drained
executor: {order: priority, queue_size: 50, batch_size: 50}
nodes: 3
handlers:
  bulk: {duration: {exponential: {mean: 3s}}}
  urgent: {duration: 1s}
workload:
  streams: [{name: low, handler: bulk, count: 2000, rate: 4/s, priority: 0}]
  jobs:
    - {name: t3, handler: urgent, kind: timer, at: 0s, due_in: 300s, priority: 10}
"""


def test_a_priority_order_behind_a_local_queue_is_warned_of_and_the_run_shows_why():
    """A newcomer's scenario: strict priority, a 50-row local queue on 3 nodes of 4
    threads. The urgent timer was claimed 0.5 s after it fell due and then waited 34.9 s
    in the queue behind bulk jobs; the lint said nothing. Now it warns, with the bound
    (50 × 3 s / 4 ≈ 37.5 s); with no local queue it does not, and the timer starts within
    a second."""
    from jobsim.format.scenario import loads
    from jobsim.output.report import analyse
    from jobsim.sim.world import run

    found = [w for w in lint(loads(URGENT_BEHIND_QUEUE)) if w.code == "priority-behind-local-queue"]
    assert len(found) == 1 and found[0].path == "executor.queue_size"
    assert "≈ 37.5s" in found[0].message and "queue_size: 0" in found[0].message
    late = analyse(run(loads(URGENT_BEHIND_QUEUE))).summary["named"]["t3"]["start_delay"]
    assert late > 10.0
    plain = URGENT_BEHIND_QUEUE.replace("queue_size: 50, batch_size: 50", "batch_size: 50")
    assert not [w for w in lint(loads(plain)) if w.code == "priority-behind-local-queue"]
    assert analyse(run(loads(plain))).summary["named"]["t3"]["start_delay"] < 1.0
    one_level = URGENT_BEHIND_QUEUE.replace("priority: 10", "priority: 0")
    assert not [w for w in lint(loads(one_level))
                if w.code == "priority-behind-local-queue"]


def test_a_stream_the_until_cuts_short_is_warned_with_what_the_run_creates():
    """A newcomer's finding: 2,000 jobs at 1/s under until: 10m passed validate with no
    warning, and the report said '601 jobs were created' with nothing of the other 1,399."""
    d = {"name": "cut", "until": "10m", "nodes": 1, "handlers": {"w": {"duration": "1s"}},
         "workload": {"streams": [{"name": "s", "handler": "w", "count": 2000,
                                   "rate": "1/s"}]}}
    [w] = warnings_of(d)
    assert (w.code, w.path) == ("created-after-the-end", "workload.streams[0].count")
    assert "about 600 are created and the other 1,400 never are" in w.message
    created = run(scenario_mod.from_dict(d)).trace.arrays()
    from jobsim.base.trace import K
    n = int((created["kind"] == K["job_created"]).sum())
    assert abs(n - 600) < 4 * math.sqrt(600)  # what the warning said, within the noise
    for fits in ({"count": 550}, {"rate": "4/s"}, {"start": "0s", "count": 590}):
        ok = copy.deepcopy(d)
        ok["workload"]["streams"][0].update(fits)
        assert warnings_of(ok) == [], fits
    drained = copy.deepcopy(d)
    drained["until"] = "drained"
    assert warnings_of(drained) == []


def test_retries_an_outage_outlasts_are_warned_with_a_backoff_that_outlasts_it():
    """A newcomer's webhook: the default 3 attempts 10 s apart against a 5-minute outage
    dead-lettered 819-879 of 3,000 jobs at seeds 1-4, and validate warned of nothing."""
    d = {"name": "webhook", "nodes": 3, "until": "drained",
         "services": {"partner": {"latency": {"exponential": {"mean": "300ms"}},
                                  "outages": [{"at": "5m", "for": "5m"}]}},
         "handlers": {"deliver": {"calls": [{"service": "partner", "timeout": "5s",
                                             "idempotency_key": "job"}]}},
         "workload": {"streams": [{"name": "hooks", "handler": "deliver", "count": 3000,
                                   "rate": "3/s"}]}}
    found = [w for w in warnings_of(d) if w.code == "retries-inside-outage"]
    assert [w.path for w in found] == ["executor.retry"]
    assert "a job due in the first 280s of it fails every attempt there and goes to the " \
        "dead-letter table" in found[0].message
    assert "exponential from 10s, factor 2: 6 attempts span 310s" in found[0].message
    outlasting = copy.deepcopy(d)
    outlasting["executor"] = {"retry": {"attempts": 6, "backoff": {"exponential": {
        "base": "10s", "factor": 2}}}}
    assert not [w for w in warnings_of(outlasting) if w.code == "retries-inside-outage"]
    s = run(scenario_mod.from_dict(outlasting))
    from jobsim.output.report import analyse
    assert analyse(s).summary["jobs"]["dead_lettered"] == 0  # the fix does what it says
    before = copy.deepcopy(d)  # its jobs all done before the outage: nothing to give up
    before["workload"]["streams"][0].update({"count": 300})
    assert not [w for w in warnings_of(before) if w.code == "retries-inside-outage"]
    once = copy.deepcopy(d)  # no retry at all: a failure is final by design
    once["executor"] = {"retry": {"attempts": 1}}
    assert not [w for w in warnings_of(once) if w.code == "retries-inside-outage"]


def test_retries_that_end_in_half_an_outage_are_warned_too():
    """A stress trial's finding: 4 attempts 40 s apart (120 s) against a 4-minute outage
    passed validate silently, and dead-lettered 409-495 of 2,400 jobs at seeds 1-3."""
    d = {"name": "half", "nodes": 3, "until": "drained",
         "executor": {"retry": {"attempts": 4, "backoff": {"fixed": "40s"}}},
         "services": {"partner": {"latency": {"exponential": {"mean": "300ms"}},
                                  "outages": [{"at": "2m", "for": "4m"}]}},
         "handlers": {"deliver": {"calls": [{"service": "partner", "timeout": "5s"}]}},
         "workload": {"streams": [{"name": "hooks", "handler": "deliver", "count": 2400,
                                   "rate": "4/s"}]}}
    found = [w for w in warnings_of(d) if w.code == "retries-inside-outage"]
    assert len(found) == 1 and "the first 120s of it fails every attempt" in found[0].message
    d["executor"]["retry"]["attempts"] = 8  # 280 s: past the outage
    assert not [w for w in warnings_of(d) if w.code == "retries-inside-outage"]


def test_a_brownout_after_the_last_call_is_no_ambiguous_timeout():
    """A stress trial's finding: a brown-out at 8 min, after the last of 600 jobs at 2/s,
    was warned of ('answers in up to 20s, in its brown-out'); no call meets it."""
    d = {"name": "late", "nodes": 2, "until": "15m",
         "services": {"svc": {"latency": {"lognormal": {"median": "200ms", "p99": "2s"}},
                              "brownouts": [{"at": "8m", "for": "2m", "latency_factor": 10}]}},
         "handlers": {"h": {"calls": [{"service": "svc", "timeout": "5s"}]}},
         "workload": {"streams": [{"name": "s", "handler": "h", "count": 600, "rate": "2/s"}]}}
    assert not [w for w in warnings_of(d) if w.code == "ambiguous-timeout"]
    d["services"]["svc"]["brownouts"][0]["at"] = "2m"  # while the calls come: warned
    assert [w for w in warnings_of(d) if w.code == "ambiguous-timeout"]


def test_a_retry_delay_on_the_zeebe_like_server_is_warned_with_the_workers_wait():
    """A seed audit's finding: the page's server has no retry delay (the fail body has no
    backoff field), yet retry.backoff: {fixed: 30s} under policy zeebe_like passed validate
    as ok and parked the job 30 s on the server between activations."""
    d = {"name": "z", "policy": "zeebe_like", "nodes": 1,
         "handlers": {"bad": {"duration": "1s", "outcome": "always_fail",
                              "retry": {"backoff": {"fixed": "30s"}}}},
         "workload": {"jobs": [{"handler": "bad"}]}}
    [w] = [w for w in warnings_of(d) if w.code == "server-retry-delay"]
    assert w.path == "handlers.bad.retry" and "fail_wait" in w.message
    d["handlers"]["bad"].pop("retry")  # the preset's: no delay
    d["handlers"]["bad"]["fail_wait"] = ["1s", "2s", "4s"]
    assert not [w for w in warnings_of(d) if w.code == "server-retry-delay"]
    d["policy"] = "flowable"  # a table executor's backoff is its own
    d["handlers"]["bad"]["retry"] = {"backoff": {"fixed": "30s"}}
    d["handlers"]["bad"].pop("fail_wait")
    assert not [w for w in warnings_of(d) if w.code == "server-retry-delay"]
