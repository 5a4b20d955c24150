"""Random scenarios — every dialect, every safe strategy, crashes, pauses, a slow database,
partitions — must run without an exception and hold every invariant. A small fixed sample
runs by default; ``-m slow`` runs many more.

Beside the fixed seeds, a fresh tier draws new seeds on every run (``JOBSIM_FUZZ_N``
scenarios per generator, 200 by default; ``JOBSIM_FUZZ_SEED=S`` replays seeds ``S`` …
``S + N - 1``). A failure names its seed and the command that replays it."""

import os
import random
import secrets
import shlex
import sys
import traceback
from pathlib import Path

import pytest

from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.sim.world import run


def random_scenario(r: random.Random) -> str:
    dialect = r.choice(["atomic", "postgres", "sqlite"])
    strategies = ["guarded_update", "optimistic"] + (
        ["skip_locked"] if dialect == "postgres" else ["unguarded_update"])
    strat = r.choice(strategies)
    nodes = r.randint(1, 4)
    faults = []
    for _ in range(r.randint(0, 3)):
        kind = r.choice(["crash", "pause", "slow_db", "partition"])
        n = f"node-{r.randint(1, nodes)}"
        at = r.randint(1, 120)
        if kind == "crash":
            restart = f", restart_after: {r.randint(1, 60)}s" if r.random() < 0.7 else ""
            faults.append(f"{{at: {at}s, crash: {n}{restart}}}")
        elif kind == "pause":
            faults.append(f"{{at: {at}s, pause: {n}, for: {r.randint(1, 90)}s}}")
        elif kind == "slow_db":
            faults.append(f"{{at: {at}s, slow_db: {r.choice([2, 10, 50])}, "
                          f"for: {r.randint(1, 60)}s}}")
        else:
            faults.append(f"{{at: {at}s, partition: {n}, for: {r.randint(1, 60)}s, "
                          f"timeout: {r.randint(1, 5)}s}}")
    latency = r.choice(["0s", "1ms", "{uniform: {low: 1ms, high: 20ms}}"])
    return f"""
name: fuzz
seed: {r.randint(0, 1000)}
until: {r.choice(["drained", "10m"])}
horizon: 2h
db: {{dialect: {dialect}, latency: {latency}, connections: {r.choice([0, 0, 2, 5])}}}
executor: {{acquisition: {strat}, wakeup: {r.choice(["poll", "notify"])},
           poll_interval: {r.choice(["500ms", "1s", "5s"])}, batch_size: {r.randint(1, 10)},
           queue_size: {r.randint(1, 10)}, threads: {r.randint(1, 4)},
           lock_time: {r.choice(["5s", "30s", "5m"])}, heartbeat: {r.choice(["none", "2s", "10s"])},
           heartbeat_scope: {r.choice(["running", "held"])},
           complete_guard: {r.choice(["none", "owner"])}, order: {r.choice(["id", "due", "priority"])},
           retry: {{attempts: {r.randint(1, 4)}, backoff: [{r.choice(["1s", "10s"])}]}}}}
nodes: {nodes}
handlers:
  w: {{duration: {{exponential: {{mean: {r.choice(["100ms", "2s", "20s"])}}}}},
      outcome: {r.choice(["succeed", "{fail_rate: 0.2}", "{fail_first: 1}"])},
      side_effect: {{at: {r.choice(["start", "end", "0.5"])}}}}}
workload:
  streams: [{{name: s, handler: w, count: {r.randint(1, 200)}, rate: {r.choice(["1/s", "5/s", "20/m"])}}}]
faults: [{", ".join(faults)}]
"""


def _check(seed: int, generate=None) -> None:
    text = (generate or random_scenario)(random.Random(seed))
    bad = _unexpected(text, analyse(run(scenario.loads(text))).violations)
    assert bad == [], (text, bad[:3])


def _unexpected(text: str, violations: list) -> list:
    """The violations a random scenario must not have. The Zeebe-like server never expires
    an activation: a job whose worker crashed, or whose completion was lost, is stranded
    until a server restart — the liveness check rightly says so, as the server's documents
    do."""
    allowed = {"liveness"} if "policy: zeebe_like" in text else set()
    return [v for v in violations if v.invariant not in allowed]


@pytest.mark.parametrize("seed", range(25))
def test_random_scenarios_hold_every_invariant(seed):
    _check(seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1500))
def test_many_random_scenarios_hold_every_invariant(seed):
    _check(seed)


POLICIES = ["flowable", "failsafe", "failsafe_v3", "skip_locked", "db_scheduler", "zeebe",
            "zeebe_like"]


def random_policy_scenario(r: random.Random) -> str:
    """A random scenario under one of the presets, its times scaled down so that locks
    expire, resets run and heartbeats matter within minutes."""
    policy = r.choice(POLICIES)
    dialect = "atomic" if policy.startswith("zeebe") else r.choice(["atomic", "postgres"])
    nodes = r.randint(1, 3)
    kinds = ["crash", "slow_db", "partition"] + (["pause"] if policy != "flowable" else [])
    faults = []
    for _ in range(r.randint(0, 3)):
        kind = r.choice(kinds)
        n = f"node-{r.randint(1, nodes)}"
        at = r.randint(1, 120)
        if kind == "crash":
            restart = f", restart_after: {r.randint(1, 60)}s" if r.random() < 0.7 else ""
            faults.append(f"{{at: {at}s, crash: {n}{restart}}}")
        elif kind == "pause":
            faults.append(f"{{at: {at}s, pause: {n}, for: {r.randint(1, 90)}s}}")
        elif kind == "slow_db":
            faults.append(f"{{at: {at}s, slow_db: {r.choice([2, 10])}, for: {r.randint(1, 60)}s}}")
        else:
            faults.append(f"{{at: {at}s, partition: {n}, for: {r.randint(1, 60)}s, "
                          f"timeout: {r.randint(1, 5)}s}}")
    extra = ""
    if policy == "flowable":
        extra = (f"hint: {r.choice(['true', 'false'])}, global_lock: "
                 f"{r.choice(['true', 'false'])}, global_lock_force: 2m, ")
    if policy in ("flowable", "skip_locked", "db_scheduler"):
        extra += f"reset_interval: {r.choice(['5s', '20s'])}, reset_page: {r.randint(1, 5)}, "
    if policy == "db_scheduler":
        extra += "heartbeat: 5s, "
    latency = r.choice(["0s", "1ms", "{uniform: {low: 1ms, high: 20ms}}"])
    # Oban has no local queue (it fetches for idle slots): a prefetched job could outlive
    # its own discard there
    queue = 0 if policy == "skip_locked" else r.randint(0, 10)
    return f"""
name: fuzz-policy
seed: {r.randint(0, 1000)}
until: {r.choice(["drained", "10m"])}
horizon: 2h
policy: {policy}
db: {{dialect: {dialect}, latency: {latency}}}
executor: {{{extra}poll_interval: {r.choice(["500ms", "2s"])}, lock_time: {r.choice(["20s", "2m"])},
           threads: {r.randint(1, 4)}, batch_size: {r.randint(1, 10)}, queue_size: {queue}}}
nodes: {nodes}
handlers:
  w: {{duration: {{exponential: {{mean: {r.choice(["100ms", "2s", "30s"])}}}}},
      outcome: {r.choice(["succeed", "{fail_rate: 0.2}", "{fail_first: 1}"])},
      retry: {{attempts: {r.randint(1, 4)}, backoff: [{r.choice(["1s", "10s"])}]}}}}
workload:
  jobs:
    - {{name: q1, handler: w, queue: q, node: node-1}}
    - {{name: q2, handler: w, queue: q, at: 1s}}
    - {{name: t, handler: w, kind: timer, due_in: {r.randint(0, 60)}s, node: node-1}}
  streams: [{{name: s, handler: w, count: {r.randint(1, 150)}, rate: {r.choice(["1/s", "5/s"])},
             nodes: [node-1]}}]
faults: [{", ".join(faults)}]
operations: [{{at: 3m, move: all}}, {{at: 3m, retry: all}}, {{at: 4m, suspend: q2}},
             {{at: 5m, activate: q2}}]
"""


@pytest.mark.parametrize("seed", range(25))
def test_random_policy_scenarios_hold_every_invariant(seed):
    _check(seed, random_policy_scenario)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(2000, 2300))
def test_many_random_policy_scenarios_hold_every_invariant(seed):
    _check(seed, random_policy_scenario)


# --- the fresh tier: new seeds every run ------------------------------------------------------

GENERATORS = {"plain": random_scenario, "policy": random_policy_scenario}
ROOT = Path(__file__).resolve().parent.parent


def _env_int(name: str, default: int | None) -> int | None:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text, 0)
    except ValueError:
        raise pytest.UsageError(f"{name} must be an integer (got {text!r})") from None


def _replay_command(kind: str, seed: int) -> str:
    python = Path(sys.executable)
    try:
        python = python.relative_to(ROOT)
    except ValueError:
        pass
    test = f"tests/test_fuzz.py::test_fresh_random_scenarios_hold_every_invariant[{kind}]"
    return (f"cd {shlex.quote(str(ROOT))} && JOBSIM_FUZZ_SEED={seed} JOBSIM_FUZZ_N=1 "
            f"{shlex.quote(str(python))} -m pytest -q {shlex.quote(test)}")


@pytest.mark.parametrize("kind", sorted(GENERATORS))
def test_fresh_random_scenarios_hold_every_invariant(kind):
    """``JOBSIM_FUZZ_N`` scenarios from seeds never run before (drawn from the OS), or from
    ``JOBSIM_FUZZ_SEED`` on: each must run and hold every invariant. The first failure
    stops the test with its seed, its violations or traceback, the scenario, and the command
    that replays it."""
    n = _env_int("JOBSIM_FUZZ_N", 200)
    base = _env_int("JOBSIM_FUZZ_SEED", None)
    if base is None:
        base = secrets.randbits(48)
    print(f"fresh fuzz ({kind}): seeds {base}..{base + n - 1}")
    for seed in range(base, base + n):
        text = GENERATORS[kind](random.Random(seed))
        try:
            violations = _unexpected(text, analyse(run(scenario.loads(text))).violations)
            problem = "\n".join(f"  {v.invariant}: {v.message} (events {list(v.events)})"
                                for v in violations[:5])
        except Exception:
            problem = traceback.format_exc()
        if problem:
            pytest.fail(f"{kind} scenario of seed {seed} failed:\n{problem}\n"
                        f"replay: {_replay_command(kind, seed)}\n"
                        f"scenario ({kind} generator, seed {seed}):{text}", pytrace=False)
