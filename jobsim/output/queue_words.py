"""The sentences of "What the run shows" on the nodes' local queues (``analysis/intake.py``):
queue-full waits that capped what the nodes took in, jobs held in one node's queue while
others idled, top-priority jobs that waited in a queue behind lower ones claimed first, and
calls that waited in a service's queue longer than they then took."""

from __future__ import annotations

from typing import Any

from ..format.lint_polls import group_words
from .numbers import first_up as _first_up, pct as _pct, seconds as _s


def capped_intake(q: dict[str, Any] | None, load: dict[str, Any] | None) -> str | None:
    """Queue-full waits that capped what the nodes took in below what fell due, over an
    arrival window of at least 20 waits, their threads idle a tenth of their time or more
    in them (``analysis/intake.py``); None where they did not, or where the run was
    overloaded (no setting of the queue would keep up: its load sentence says so)."""
    if not q or q.get("arriving") is None or q.get("intake") is None or \
            q["arriving"] <= q["intake"] or q["window"] < 20 * q["wait"] or \
            (q["share"] or 0.0) < 0.1 or (load or {}).get("verdict") == "overloaded":
        return None
    if q["queue_size"] is None:  # the capped nodes' settings differ
        what = (f"waited its queue_full_wait (up to {_s(q['wait'])}) before claiming again, "
                f"{q['waits']:,} times with due rows waiting, though its queue and threads "
                f"ran dry sooner. So the nodes took in at most")
    else:
        what = (f"waited queue_full_wait ({_s(q['wait'])}) before claiming again, "
                f"{q['waits']:,} times with due rows waiting, though its queue of "
                f"{q['queue_size']:,} and its {q['threads']:,} threads ran dry sooner. So each "
                f"took in at most {q['queue_size'] + q['threads']:,} jobs per "
                f"{_s(q['wait'])},")
    whose = "The nodes" if not q.get("handlers") else \
        _first_up(group_words(q["group"], q["handlers"]))
    return (f"{whose} took in fewer jobs than fell due: a node whose local queue was full "
            f"{what} {q['intake']:.3g} jobs/s in all, against {q['arriving']:.3g}/s falling "
            f"due: the waits grew as long as the jobs kept coming, while the threads sat idle "
            f"for {_s(q['idle'])} of thread time in those waits, {_pct(q['share'])} of all "
            f"their thread time. A shorter queue_full_wait, a larger queue_size or wakeup: "
            f"notify keeps them at work.")


def held_in_queues(q: dict[str, Any] | None, load: dict[str, Any] | None) -> str | None:
    """Jobs that waited in one node's local queue, half their start delay or more and
    longer than a run, while the other nodes had half a thread idle or more on average
    (``analysis/intake.py``: ``local_queues``); None where not, or in an overloaded run."""
    if not q or q["queued_mean"] is None or q["start_delay_mean"] is None or \
            (load or {}).get("verdict") == "overloaded":
        return None
    if q["queued_mean"] < max(q["run_mean"] or 0.0, q["start_delay_mean"] / 2) or \
            q["idle_elsewhere"] < 0.5:
        return _one_queue(q)
    return (f"Local queues made much of the wait: jobs started a mean "
            f"{_s(q['start_delay_mean'])} after they were due, {_s(q['queued_mean'])} of it "
            f"in a node's local queue after the claim that took them, while the other nodes "
            f"had {q['idle_elsewhere']:.2g} "
            f"thread{'' if q['idle_elsewhere'] == 1 else 's'} idle on average. A node "
            f"claims up to its "
            f"queue's room ({q['queue_size']:,} here) for its own threads, and what it holds "
            f"the others cannot run; with queue_size: 0 a node claims only for its idle "
            f"threads (a small queue may instead cap what the nodes take in, as the "
            f"queue-full-wait-caps-intake warning tells).")


def _one_queue(q: dict[str, Any]) -> str | None:
    """One node's local queue that made much of its own jobs' wait, where the cluster's mean
    hides it (a node of 1 thread and a queue of 10 beside two of 4 threads and none: its
    jobs waited 16-17 s against 3.3-3.6 s, and the mean over every job 2.1 s in a queue):
    half its jobs' start delay or more and longer than a run, twice the other nodes' jobs'
    delay, while those had half a thread idle or more; the longest such queue's."""
    held = [(f["queued_mean"], n, f) for n, f in (q.get("by_node") or {}).items()
            if f["queued_mean"] is not None and f["start_delay_mean"] is not None and
            f["queued_mean"] >= max(q["run_mean"] or 0.0, f["start_delay_mean"] / 2) and
            f["start_delay_mean"] >= 2 * (f["others_start_delay_mean"] or 0.0) and
            f["idle_elsewhere"] >= 0.5]
    if not held:
        return None
    _, name, f = max(held, key=lambda h: (h[0], h[1]))
    return (f"{name}'s local queue made much of its jobs' wait: the {f['jobs']:,} it ran first "
            f"started a mean {_s(f['start_delay_mean'])} after they were due, "
            f"{_s(f['queued_mean'])} of it in its queue ({f['queue_size']:,} places), against "
            f"{_s(f['others_start_delay_mean'])} for the other nodes' jobs, while those nodes "
            f"had {f['idle_elsewhere']:.2g} thread{'' if f['idle_elsewhere'] == 1 else 's'} "
            f"idle on average. A node claims up to its queue's room for its own threads, and "
            f"what it holds the others cannot run; with queue_size: 0 it claims only for its "
            f"idle threads.")


def queued_past_priority(q: dict[str, Any] | None) -> str | None:
    """Top-class jobs that waited half their start delay or more (and 100 ms or more) in a
    node's local queue, behind rows of lower classes that the node claimed before them
    (``queued_by_priority``); None where not."""
    if not q:
        return None
    p = max(q["by_priority"], key=int)
    top = q["by_priority"][p]
    queued, mean, ahead = top["queued_mean"], top["start_delay_mean"], top["lower_ahead_mean"]
    if queued is None or mean is None or not ahead or ahead < 0.5 or \
            queued < max(0.1, mean / 2):
        return None
    one = top["jobs"] == 1
    waited = (f"Priority {p}'s job waited {_s(mean)} to start" if one else
              f"Priority {p}'s jobs waited a mean {_s(mean)} to start (the latest "
              f"{_s(top['start_delay_max'])})")
    rows = f"{ahead:.3g} row{'' if ahead == 1 else 's'}"
    return (f"{waited}, {_s(queued)} of it in a node's local queue behind "
            + (f"{rows}" if one else f"a mean {rows}") + " of lower priority that the node "
            f"had claimed before {'it' if one else 'them'}: the table hands out rows by "
            f"priority, but a node runs what it claimed in the order it claimed it (queues "
            f"of {q['queue_size']:,} here). With queue_size: 0 a node claims only for its idle "
            f"threads, and the rows it leaves wait in the table, where the next claim takes "
            f"the top class first.")



#: a service's callers are told held back where half or more waited, a mean of this many
#: times its latency or more (4 slots for 9 calls/s of 200 ms, whose polls bunch the calls:
#: 55 % waited, 226 ms against 199 ms, and nothing came of it; 2 slots: 988 ms, and 3,600
#: double effects)
HELD = 2.0


def held_by_services(services: dict[str, Any] | None) -> list[str]:
    """Services whose callers waited for a place (``capacity``) or a token (``rate_limit``)
    longer than their calls then took: half their calls or more waited, a mean of ``HELD``
    times the mean latency or more. The callers' threads are held meanwhile, so the
    executor's load reads as its threads' though the service's slots are what it waits
    on."""
    out = []
    for name, f in sorted((services or {}).items()):
        calls, waited = f.get("calls") or 0, f.get("waited") or 0
        wait, latency = f.get("mean_wait"), f.get("mean_latency")
        if not calls or waited < calls / 2 or wait is None or latency is None or \
                wait < HELD * latency:
            continue
        out.append(f"{name} held its callers back: {waited:,} of its {calls:,} calls waited "
                   f"for a place or a token, a mean {_s(wait)} each against a mean latency "
                   f"of {_s(latency)}, their threads held meanwhile.")
    return out
