"""``jobsim new NAME [--policy P] [--out FILE]``: a small commented scenario that runs as
written — the way in to writing one's own.

The file is new or nothing is written: an existing file of that name is left alone (exit
2), and the text is checked by the scenario loader before it is written, so a name the
format refuses is refused here, with the loader's words.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..base.errors import ScenarioError
from ..executor.policies import PRESETS
from ..format.scenario import loads
from .status import BAD_INPUT, OK

#: the executor settings written for the generic executor (a preset brings its own)
_GENERIC = """\
executor:                    # how every node's executor behaves (a node may override)
  poll_interval: 2s          # a node polls the jobs table this often when it found nothing
  threads: 4                 # the jobs a node runs at once
  lock_time: 1m              # a claimed row is the node's for this long; a crashed node's
                             # rows are free again once it passes
  retry: {attempts: 3, backoff: [10s, 1m]}   # a failure is retried 10 s, then 1 min later
"""

_PRESET = """\
# The preset's executor settings (`jobsim list --policies` shows them all); a value set here
# overrides the preset's, e.g.
# executor:
#   threads: 4
"""


#: what a preset needs beside the template to run as written: (executor, extra faults)
_NEEDS = {
    "lesson": ("""\
executor:
  # the lesson's executor wakes only on a fake clock's ticks (clock.ticks, each tick listed:
  # scenarios/lesson.yaml); for a stream of jobs it polls here instead
  wakeup: poll
""", ""),
    "zeebe_like": ("", """\
  # the Zeebe-like server never frees a crashed worker's jobs (no lock expiry): they wait
  # for the server to restart
  - {at: 5m, restart_server: true}
"""),
}


#: where an exhausted job goes, by ``executor.exhausted``
_EXHAUSTED = {"dead_letter": "goes to the dead-letter table", "incident": "raises an incident",
              "failed": "is kept as failed"}


def _retried(text: str) -> str:
    """What the template's comment says of a failed execution: what the scenario's retry
    policy (the preset's, or the generic one) does with it."""
    try:
        sc = loads(text.replace("{retried}", ""), "the template")
    except ScenarioError:
        return "(and is retried)"  # ``new`` reports the loader's words
    policy = sc.retry_for(sc.nodes[0].name, "work")
    end = _EXHAUSTED.get(sc.executor.exhausted, "ends failed")
    n = policy.total_attempts()
    if n > 1:
        return f"(retried: {n:,} attempts in all)"
    return f"(never retried here: one attempt, then the job {end})"


def template(name: str, policy: str | None = None) -> str:
    """The scenario ``jobsim new`` writes."""
    text = _template(name, policy)
    return text.replace("{retried}", _retried(text))


def _template(name: str, policy: str | None) -> str:
    executor, faults = _NEEDS.get(policy or "", ("", ""))
    if policy:
        whose = f"policy: {policy}              # whose executor: `jobsim list --policies`\n"
        whose += executor or _PRESET
    else:
        whose = "# policy: flowable          # a real system's executor instead: " \
            "`jobsim list --policies`\n" + _GENERIC
    return f"""\
# A first scenario, written by `jobsim new`. It runs as written:
#
#   jobsim run {name}.yaml
#
# which prints what happened and writes reports/{name}/ (report.md, plots, view.html).
# Change one value, run again, and compare. The whole format: `jobsim schema`; every
# executor setting and its default: the README's "Executor settings".

name: {name}
description: "Two nodes share a stream of jobs; node-a crashes at 2 min and restarts"
seed: 1                      # the same seed gives the same run, byte for byte
until: 10m                   # simulated time to run (or `drained`: until no job is left)

{whose}
nodes:                       # the executor processes, racing for the same rows
  - name: node-a
  - name: node-b

handlers:                    # what running a job does
  work:
    duration: {{exponential: {{mean: 2s}}}}   # how long one execution takes
    outcome: {{fail_rate: 0.1}}             # one execution in ten fails {{retried}}

workload:                    # the jobs: here a Poisson stream of 200, one a second on average
  streams:
    - {{name: orders, handler: work, count: 200, rate: 1/s}}

faults:                      # what goes wrong, and when
  - {{at: 2m, crash: node-a, restart_after: 30s}}
{faults}
expect:                      # checked after the run (a failing one exits 1)
  jobs.lost: "== 0"
  jobs.created: "== 200"

# Next questions to ask of it:
#   jobsim run {name}.yaml --seeds 10             # do the figures hold at other seeds?
#   jobsim run {name}.yaml --set faults=[]        # what did the crash cost?
#   jobsim run {name}.yaml --set nodes[1].threads=1
"""


def new(args: argparse.Namespace) -> int:
    """Write the scenario ``args.name`` (``--policy``, ``--out``); 2 if it cannot."""
    name = args.name[:-5] if args.name.endswith(".yaml") else args.name
    if args.policy is not None and args.policy not in PRESETS:
        print(f"jobsim new: --policy: expected one of {', '.join(sorted(PRESETS))} "
              f"(got {args.policy!r})", file=sys.stderr)
        return BAD_INPUT
    text = template(name, args.policy)
    try:
        loads(text, f"the scenario of `jobsim new {name}`")
    except ScenarioError as exc:
        print(f"jobsim new: {exc.problems[0].format()}", file=sys.stderr)
        return BAD_INPUT
    path = Path(args.out) if args.out else Path(f"{name}.yaml")
    try:
        with open(path, "x", encoding="utf-8") as f:  # a new file, or nothing written
            f.write(text)
    except FileExistsError:
        print(f"jobsim new: {path} exists; jobsim writes only a new file (another name, or "
              f"--out FILE)", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        print(f"jobsim new: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return BAD_INPUT
    print(f"wrote {path}: run it with `jobsim run {path}`")
    return OK
