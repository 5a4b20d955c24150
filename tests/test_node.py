"""Nodes: wake-ups, the local queue, the connection pool, hung handlers, idle polls."""

import numpy as np
import pytest

from jobsim.format import scenario
from jobsim.analysis.checks import check
from jobsim.analysis.history import histories
from jobsim.output.report import analyse
from jobsim.base.trace import K
from jobsim.sim.world import run

BASE = """
name: t
seed: 3
until: {until}
db: {{latency: {latency}, connections: {connections}}}
executor: {{acquisition: guarded_update, wakeup: {wakeup}, poll_interval: {poll},
           batch_size: {batch}, queue_size: {queue}, threads: {threads}, lock_time: 5m}}
nodes: {nodes}
handlers:
  work: {{duration: {duration}, outcome: {outcome}}}
workload:
  streams: [{{name: s, handler: work, count: {count}, rate: {rate}}}]
"""


def make(**kw):
    p = dict(until="drained", latency="0s", connections=0, wakeup="poll", poll="10s", batch=10,
             queue=100, threads=4, nodes=1, duration="100ms", outcome="succeed", count=500,
             rate="0.05/s")
    p.update(kw)
    if isinstance(p["nodes"], int):  # pinned at 0 s: these tests time each poll
        p["nodes"] = "[" + ", ".join(f"{{name: node-{i + 1}, start_at: 0s}}"
                                     for i in range(p["nodes"])) + "]"
    return scenario.loads(BASE.format(**p))


def start_delays(sc):
    return np.array([s.first_start - s.due for s in histories(run(sc).trace).jobs.values()])


def test_polling_adds_half_the_interval_at_light_load():
    """Jobs arriving at random moments wait for the next poll: T/2 on average (T = 10s)."""
    d = start_delays(make(count=2000, rate="0.02/s"))
    assert abs(d.mean() - 5.0) < 0.25, d.mean()
    assert d.min() >= 0 and d.max() <= 10.0 + 1e-9


def test_notify_starts_jobs_at_once():
    d = start_delays(make(wakeup="notify", count=300, rate="0.5/s"))
    assert d.max() == 0.0


def test_idle_polls_are_counted_not_simulated():
    """A day with a job every hour and a 10-second poll: 8,640 polls, nearly all counted
    in a handful of events."""
    sc = make(until="1d", count=24, rate="1/h", duration="1s")
    a = analyse(run(sc))
    polls = a.summary["polls"]
    assert 8_600 <= polls["total"] <= 8_650, polls
    assert polls["skipped"] > 8_500
    assert a.summary["trace_events"] < 500
    assert a.violations == []


def test_a_full_batch_repolls_at_once():
    """A burst of 50 jobs with batch 10 and room in the queue: five claims at t≈0, not five
    poll intervals."""
    text = BASE.format(until="drained", latency="0s", connections=0, wakeup="poll", poll="10s",
                       batch=10, queue=100, threads=50,
                       nodes="[{name: a, start_at: 0s}]", duration="1s",
                       outcome="succeed", count=50, rate="0.05/s")
    text = text.replace(", rate: 0.05/s", "")  # a burst: count jobs at once
    result = run(scenario.loads(text))
    cols = result.trace.arrays()
    acq = cols["kind"] == K["acquire"]
    assert cols["time"][acq][:6].tolist() == [0.0] * 6
    assert cols["b"][acq][:6].tolist() == [10, 10, 10, 10, 10, 0]


def test_batch_is_bounded_by_free_queue_slots():
    text = BASE.format(until="drained", latency="0s", connections=0, wakeup="poll", poll="1s",
                       batch=10, queue=3, threads=1, nodes=1, duration="10s",
                       outcome="succeed", count=20, rate="0.05/s").replace(", rate: 0.05/s", "")
    result = run(scenario.loads(text))
    cols = result.trace.arrays()
    acq = cols["kind"] == K["acquire"]
    assert cols["a"][acq].max() <= 3
    assert check(result.trace, scenario.loads(text)) == []


def test_one_connection_serialises_statements():
    """With a pool of one connection, no two statements are in flight at once: commit
    instants of acquire statements are at least one latency apart."""
    sc = make(latency="50ms", connections=1, nodes=3, count=300, rate="2/s", poll="1s")
    result = run(sc)
    cols = result.trace.arrays()
    t = np.sort(cols["time"][cols["kind"] == K["acquire"]])
    assert (np.diff(t) >= 0.05 - 1e-9).all()


def test_a_hung_job_stays_explained():
    """A handler that hangs forever holds its thread; its lock expires and another poll takes
    the job again (a duplicate caused by lock expiry), and at the end it is still pending —
    not lost."""
    sc = make(until="30m", outcome="hang", count=1, rate="1/s", poll="10s", nodes=2)
    a = analyse(run(sc))
    assert a.violations == []
    s = a.summary
    assert s["jobs"]["pending"] == 1 and s["jobs"]["lost"] == 0
    assert s["duplicate_executions"]["by_cause"]["lock_expired"] >= 1


TICKS = """
name: ticks
seed: {seed}
until: 10m
db: {{dialect: {dialect}, latency: {latency}}}
policy: lesson
executor: {{batch_size: 10, queue_size: {queue}, threads: {threads}, lock_time: 5m,
           claim_when: {claim_when}, retry: {{attempts: 3, backoff: [20s]}}}}
nodes: [{{name: a}}, {{name: b}}]
clock: {{ticks: [{ticks}]}}
handlers: {{w: {{duration: {{exponential: {{mean: 8s}}}}, outcome: {{fail_rate: 0.2}}}}}}
workload: {{streams: [{{name: s, handler: w, count: 40, rate: 0.5/s}}]}}
"""


def _peak_queues(monkeypatch):
    """Wrap the nodes' lock listeners (the only way into a local queue) to record each
    node's longest local queue."""
    from jobsim.executor import node as module

    peak: dict[str, int] = {}
    original = module.lock_listener

    def wrapped(node):
        listener = original(node)

        def on_locked(locked):
            listener(locked)
            peak[node.name] = max(peak.get(node.name, 0), len(node.queue))

        return on_locked

    monkeypatch.setattr(module, "lock_listener", wrapped)
    return peak


@pytest.mark.parametrize("dialect,latency", [("atomic", "0s"), ("atomic", "50ms"),
                                             ("postgres", "{uniform: {low: 1ms, high: 2s}}"),
                                             ("sqlite", "20ms")])
@pytest.mark.parametrize("queue,threads", [(0, 1), (0, 3), (1, 1), (2, 2), (3, 1)])
@pytest.mark.parametrize("claim_when", ["room", "empty"])
def test_a_ticking_node_never_claims_more_than_its_free_slots(monkeypatch, dialect, latency,
                                                              queue, threads, claim_when):
    """The fake clock's path (the lesson policy's ``tick``) with ``queue_size`` below
    ``batch_size``: every claim asks for at most the free slots — the local queue never holds
    more than ``queue_size`` (with no local queue, nothing waits in it at all) — and every
    job is still run; whether the node claims whenever it has room or, as the lesson's loop,
    only once it holds nothing."""
    peak = _peak_queues(monkeypatch)
    ticks = ", ".join(f"{{at: {t}s, nodes: [a, b]}}" for t in range(0, 590, 7))
    sc = scenario.loads(TICKS.format(seed=queue * 10 + threads, dialect=dialect,
                                     latency=latency, queue=queue, threads=threads,
                                     ticks=ticks, claim_when=claim_when))
    result = run(sc)
    a = analyse(result)
    assert a.violations == []
    assert a.summary["jobs"]["done"] + a.summary["jobs"]["dead_lettered"] == 40
    assert peak and max(peak.values()) <= queue
    cols = result.trace.arrays()
    acq = cols["kind"] == K["acquire"]
    assert cols["a"][acq].max() <= max(queue, threads) < 10  # never the whole batch
    if queue and claim_when == "room":
        assert max(peak.values()) == queue  # the queue did fill: the bound was tested


def test_a_ticking_node_with_a_timer_table_runs_its_timers():
    """With a timer table a node has two acquisition loops; on the fake clock they shared
    one tick event, so the job table's loop never woke again and the timer loop claimed job
    rows: no timer ever came due. Each loop now waits for its own tick."""
    sc = scenario.loads("""
name: timer-ticks
until: 10m
policy: flowable
executor: {wakeup: ticks, batch_size: 10, queue_size: 2, threads: 1, hint: false}
nodes: [{name: a}]
clock: {ticks: [{at: 0s, nodes: [a]}, {at: 20s, nodes: [a]}, {at: 40s, nodes: [a]}]}
handlers: {w: {duration: 1s}}
workload:
  jobs: [{name: now, handler: w}, {name: later, handler: w, kind: timer, due_in: 10s},
         {name: next, handler: w, at: 5s}]
""")
    a = analyse(run(sc))
    assert a.violations == []
    assert a.summary["jobs"]["done"] == 3
    named = a.summary["named"]
    # the timer is moved and run at the first tick after it fell due (20 s); the job that
    # arrived at 5 s is claimed at that tick too and waits in the local queue for it (1 s)
    assert named["later"]["start_delay"] == 10.0 and named["next"]["start_delay"] == 16.0


STAGED = """
name: staged
seed: 1
db: {{dialect: postgres, latency: 2ms}}
executor: {{wakeup: notify, poll_interval: 1h, threads: 2, queue_size: 0,
           retry: {{attempts: 3, backoff: [5s]}}, stager_interval: {stager}}}
nodes: [{{name: node-1, start_at: 0s}}, {{name: node-2, start_at: 0s}}]
handlers: {{w: {{duration: 100ms, outcome: {{fail_first: 2}}}}}}
workload: {{jobs: [{{name: a, handler: w}}]}}
"""


def _starts(stager: str) -> list[float]:
    result = run(scenario.loads(STAGED.format(stager=stager)))
    a = result.trace.arrays()
    return a["time"][a["kind"] == K["exec_start"]].tolist()


def test_a_stager_brings_retries_to_notify_nodes_that_do_not_poll():
    """Notify nodes that poll once an hour see a retry only when something notifies them:
    with a stager every second, each retry (due 5 s after its failure) starts within a
    second of its due time; without one, an hour later."""
    staged = _starts("1s")
    assert len(staged) == 3
    for before, after in zip(staged, staged[1:]):
        assert 5.0 <= after - before <= 5.0 + 1.0 + 0.1, staged
    unstaged = _starts("none")
    assert len(unstaged) == 3 and unstaged[1] - unstaged[0] >= 3600.0 - 5.0, unstaged


def test_parts_follow_the_settings():
    """The table of parts: a preset's settings choose what a node runs."""
    from jobsim.executor.parts import parts_of
    from jobsim.sim.world import World

    sc = scenario.loads(STAGED.format(stager="1s").replace(", {name: node-2, start_at: 0s}", ""))
    node = World(sc).nodes[0]
    assert parts_of(node) == ["acquisition loop (jobs)", "worker threads", "stager"]
    flowable = scenario.loads("""
name: f
policy: flowable
nodes: 1
handlers: {w: {}}
workload: {jobs: [{name: a, handler: w}]}
""")
    node = World(flowable).nodes[0]
    assert parts_of(node) == ["acquisition loop (jobs)", "acquisition loop (timers)",
                              "worker threads", "reset thread", "unacquirer"]
