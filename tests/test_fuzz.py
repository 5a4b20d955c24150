"""Random scenarios must run without an exception and hold every invariant that their
settings do not excuse (tests/fuzzjudge.py decides, invariant by invariant, and says why).

Three generators: ``full`` (tests/fuzzgen.py: the whole scenario format, in combination,
drawn as a dict), and the two older ones here, ``plain`` (every dialect and safe strategy,
crashes, pauses, a slow database, partitions) and ``policy`` (the presets), which hold
trace-level regressions at their fixed seeds. A small fixed sample of each runs by default;
``-m slow`` runs many more; ``python tools/fuzz.py`` runs thousands.

Beside the fixed seeds, a fresh tier draws new seeds on every run from the OS
(``JOBSIM_FUZZ_N`` scenarios per generator, ``FRESH_N`` by default; ``JOBSIM_FUZZ_SEED=S``
replays seeds ``S`` … ``S + N - 1``). A failure prints its seed, what failed, the scenario as
YAML and the command that replays it.

The full generator is also held to the format: at least 95 % of its draws valid, and every
key, enum value and form of the JSON Schema drawn within ``COVERAGE_DRAWS`` draws."""

import os
import random
import secrets
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import fuzzcover
import fuzzexec
import fuzzgen
import fuzzwork
from fuzzjudge import as_yaml, judge, legitimate
from jobsim.base.errors import ScenarioError
from jobsim.format.scenario import from_dict, schema, variants_of


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
    o = judge(yaml.safe_load(text))
    assert o.kind in ("ok", "known"), (text, o.kind, o.detail, o.text[-2000:])


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


# --- the full generator ------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(20))
def test_full_scenarios_hold_every_invariant(seed):
    doc = fuzzgen.scenario(random.Random(seed))
    o = judge(doc)
    assert o.kind in ("ok", "known"), f"{o.kind}: {o.detail}\n{o.text}\n{as_yaml(doc)}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3000, 3500))
def test_many_full_scenarios_hold_every_invariant(seed):
    test_full_scenarios_hold_every_invariant(seed)


def test_the_full_generators_draws_are_valid():
    """The format's own validation judges a draw: a refused one is a generator bug."""
    refused = {}
    for seed in range(300):
        try:
            variants_of(fuzzgen.scenario(random.Random(seed)), f"<seed {seed}>")
        except ScenarioError as exc:
            refused[seed] = str(exc).splitlines()[:3]
    assert len(refused) <= 15, refused  # at least 95 %
    assert refused == {}, refused  # (and today all of them)


#: enough draws to cover the format: 400 did on 5 disjoint seed ranges
COVERAGE_DRAWS = 450


def coverage_failure(docs: list[dict]) -> str | None:
    """What the coverage test says when ``docs`` leave part of the format undrawn."""
    missing = fuzzcover.uncovered(docs, schema())
    if not any(missing.values()):
        return None
    return f"never drawn in {len(docs)} draws:\n" + "\n".join(
        f"  {what}: {item}" for what, items in missing.items() for item in items)


def test_every_key_value_and_form_of_the_format_is_drawn():
    docs = [fuzzgen.scenario(random.Random(seed)) for seed in range(COVERAGE_DRAWS)]
    figures = fuzzcover.figures(docs, schema())
    print("drawn / in the schema: " + ", ".join(f"{k} {d}/{t}" for k, (d, t) in figures.items()))
    assert figures["keys"][1] > 300 and figures["values"][1] > 100  # the schema was walked
    failure = coverage_failure(docs)
    assert failure is None, failure


def test_the_coverage_check_names_a_key_and_a_value_never_drawn(monkeypatch):
    """Acceptance: the coverage test fails when one draw is removed. A breaker never drawn
    (the generator's draw of it removed) is named by its two keys; a jitter form and a busy
    handler taken out of the generator's choices are named as values; a section pruned from
    every draw is named with all its keys."""
    monkeypatch.setattr(fuzzwork, "breaker", lambda r: (r.random(), None)[1])
    monkeypatch.setattr(fuzzwork, "FAIL_WAIT_JITTERS", ("full",))
    monkeypatch.setattr(fuzzexec, "SQLITE_BUSY", ("queue",))
    docs = [fuzzgen.scenario(random.Random(seed)) for seed in range(COVERAGE_DRAWS)]
    failure = coverage_failure(docs) or ""
    for named in ("keys: handlers.*.calls[].breaker.after\n",
                  "keys: handlers.*.calls[].breaker.open_for\n",
                  "values: db.sqlite_busy=sleep\n",
                  "values: handlers.*.fail_wait.exponential.jitter=equal\n"):
        assert named in failure + "\n", failure
    assert "keys: hunt" not in failure
    for doc in docs:
        doc.pop("hunt", None)
    failure = coverage_failure(docs) or ""
    assert all(f"keys: {k}\n" in failure + "\n" for k in ("hunt", "hunt.kinds", "hunt.seeds"))
    assert "values: hunt.kinds[]=restart_server" in failure


def test_a_seed_gives_the_same_scenario_under_any_hash_seed():
    code = ("import sys; sys.path.insert(0, 'tests'); import fuzzgen; "
            "print(fuzzgen.digest(range(300)))")
    digests = set()
    for hashseed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        digests.add(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, text=True,
                                   capture_output=True, check=True).stdout.strip())
    assert digests == {fuzzgen.digest(range(300))}


def test_the_judge_excuses_only_what_the_settings_explain():
    from jobsim.analysis.violation import Violation

    race = {"name": "r", "db": {"dialect": "postgres"}, "nodes": 2, "handlers": {"w": {}},
            "workload": {"jobs": [{"handler": "w"}]},
            "executor": {"acquisition": "read_then_write"}}
    double = Violation("exclusive_locks", 1, "acquired twice", (1, 2))
    assert legitimate(race, from_dict(race), double)  # read_then_write at READ COMMITTED
    race["db"]["isolation"] = "serializable"
    assert legitimate(race, from_dict(race), double) is None
    race["executor"]["acquisition"] = "guarded_update"
    race["db"] = {"dialect": "postgres"}
    assert legitimate(race, from_dict(race), double) is None
    for name in ("no_job_lost", "duplicates_explained", "terminal_once", "done_means_ran"):
        assert legitimate(race, from_dict(race), Violation(name, 1, "x", ())) is None
    stuck = Violation("liveness", 1, "job 1 is stranded in suspended_job: it was suspended "
                      "and no activation is scheduled", ())
    assert legitimate(race, from_dict(race), stuck) is None  # no operator suspended it
    race["operations"] = [{"at": "1s", "suspend": "all"}]
    assert legitimate(race, from_dict(race), stuck)
    # the global acquire lock, its holder's age read on each node's own clock: a clock
    # stepped ahead forces a lock still held (fresh fuzz seed 896929436101: n4 stepped 10 s
    # ahead took two rows worker-1 had just claimed under the lock)
    flowable = {**race, "executor": {"global_lock": True, "global_lock_force": "5s"}}
    flowable.pop("operations")
    assert legitimate(flowable, from_dict(flowable), double) is None  # one clock
    flowable["faults"] = [{"at": "20s", "clock": "node-2", "step": "10s"}]
    assert legitimate(flowable, from_dict(flowable), double)


# --- the fresh tier: new seeds every run ------------------------------------------------------

GENERATORS = {"plain": random_scenario, "policy": random_policy_scenario}  # YAML text
#: every generator as a dict (what the judge takes)
DRAWS = {"full": fuzzgen.scenario,
         "plain": lambda r: yaml.safe_load(random_scenario(r)),
         "policy": lambda r: yaml.safe_load(random_policy_scenario(r))}
#: fresh scenarios per generator by default: about 15 s of CPU in all
FRESH_N = {"full": 120, "plain": 40, "policy": 40}
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


@pytest.mark.parametrize("kind", sorted(DRAWS))
def test_fresh_random_scenarios_hold_every_invariant(kind):
    """``JOBSIM_FUZZ_N`` scenarios from seeds never run before (drawn from the OS inside the
    test, so that every xdist worker collects the same ids), or from ``JOBSIM_FUZZ_SEED`` on:
    each must run and hold every invariant its settings do not excuse. The first failure
    stops the test with its seed, its violations or traceback, the scenario as YAML, and
    the command that replays it."""
    n = _env_int("JOBSIM_FUZZ_N", FRESH_N[kind])
    base = _env_int("JOBSIM_FUZZ_SEED", None)
    if base is None:
        base = secrets.randbits(48)
    print(f"fresh fuzz ({kind}): seeds {base}..{base + n - 1}")
    known = []
    for seed in range(base, base + n):
        doc = DRAWS[kind](random.Random(seed))
        o = judge(doc)
        if o.kind == "known":
            known.append(f"seed {seed}: {o.detail}")
        elif o.kind != "ok":
            pytest.fail(f"{kind} scenario of seed {seed}: {o.kind}: {o.detail}\n{o.text}\n"
                        f"replay: {_replay_command(kind, seed)}\n"
                        f"scenario ({kind} generator, seed {seed}):\n{as_yaml(doc)}",
                        pytrace=False)
    print("known bugs met (tests/fuzzjudge.py):" + "".join(f"\n  {k}" for k in known))


def test_the_fuzz_tool_runs_classes_and_writes(tmp_path):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "tools/fuzz.py", "--count", "4", "--workers", "1",
                        "--seed", "7", "--out", str(out)], cwd=ROOT, text=True,
                       capture_output=True)
    assert r.returncode in (0, 1), r.stderr
    assert "seeds 7..10" in r.stdout and "classes: ok " in r.stdout
    assert "cost: actual/estimated events" in r.stdout and "time: wall" in r.stdout
