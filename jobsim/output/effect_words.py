"""The effects that decided a run (``summary["effects"]``, ``analysis.effects``), told in
sentences for "What the run shows": each says what happened, with the run's figures, and
what it cost; an effect the run does not show is not mentioned."""

from __future__ import annotations

from typing import Any

from ..analysis.effects import LOCK_STEP
from ..analysis.phases import TOGETHER
from ..format.lint_polls import group_words
from .numbers import first_up as _upper, pct as _pct, seconds, threads as _threads
from .load_words import load_sentences
from .queue_words import capped_intake, held_by_services, held_in_queues, queued_past_priority

_s = seconds


#: a stretch of every thread busy while jobs waited, at least this long (or this share of a
#: shorter run; or such stretches over twice that share in all) and with at least as many
#: jobs waiting as there are threads, is told (a shorter one is a queue's normal life)
SATURATED = 30.0
SATURATED_SHARE = 0.25


def effect_sentences(summary: dict[str, Any]) -> list[str]:
    effects = summary.get("effects") or {}
    out: list[str] = []
    busy = _saturated(effects.get("saturation"), summary.get("end_time") or 0.0)
    phases = effects.get("poll_phases")
    for p in [phases] + list((phases or {}).get("other_sets") or []) if phases else []:
        # the whole cluster's phases, then other sets of nodes', by their jobs
        if p["lock_step"]:
            out.append(_lock_step(p))
            continue
        told = bunched(p)  # (it names the nodes that polled together, if any)
        # (full claims where every thread was busy for long: the saturation says why)
        out += [x for x in ([told] if told else [
            None if busy else full_claims(p, effects.get("load")), claims_met(p)]) if x]
    imb = effects.get("imbalance")
    if imb and imb["imbalanced"]:
        threads = {k: ((summary.get("nodes") or {}).get(imb[k]) or {}).get("threads")
                   for k in ("most", "least")}
        if None not in threads.values() and threads["most"] != threads["least"]:
            # the even share is by threads (and time up): said where theirs differ
            line = (f"The work was uneven: {imb['most']} ran {imb['most_executions']:,} "
                    f"executions (even share for its {_threads(threads['most'])}, "
                    f"{imb['most_even']:,.0f}), {imb['least']} {imb['least_executions']:,} "
                    f"(for its {threads['least']}, {imb['least_even']:,.0f}).")
        else:
            line = (f"The work was uneven: {imb['most']} ran {imb['most_executions']:,} "
                    f"executions (even share {imb['most_even']:,.0f}), {imb['least']} "
                    f"{imb['least_executions']:,} (even share {imb['least_even']:,.0f}).")
        if imb["why"] == "poll_phases" and phases:
            gap = phases["gap_share"]
            fixed = not phases["jitter"] and not imb.get("full_claims")
            line += (" The nodes poll at phases that stay apart but uneven"
                     + (" (no jitter, and no claim came back full to shift them)"
                        if fixed else "")
                     + ": whoever polls first after a job falls due takes it, and "
                     f"{imb['most']}'s polls follow {_pct(gap[imb['most']])} of the "
                     f"{_s(phases['interval'])} cycle, {imb['least']}'s "
                     f"{_pct(gap[imb['least']])}" + ("." if fixed else
                                                     " on average over the run."))
        elif imb["why"] == "fault_window":
            line += _fed(imb)
        elif imb["why"] == "local_queue":  # its queue's room, claimed too
            queued = effects["local_queues"]["by_node"][imb["most"]]
            line += (f" {imb['most']} claims for its local queue ({queued['queue_size']:,} "
                     f"places) as well as its threads, and the rows it holds there no other "
                     f"node can run.")
        elif imb.get("poll_interval"):
            line += _paces(imb)
        elif phases and not phases["lock_step"]:
            line += (" The poll phases do not explain it: each node's share of the work is "
                     "not its share of the poll cycle.")
        out.append(line + _busier(imb, summary.get("nodes") or {}))
    load = effects.get("load")
    if load:
        out += load_sentences(load)
    out += held_by_services(summary.get("services"))
    if told := capped_intake(effects.get("queue_full"), load) or \
            held_in_queues(effects.get("local_queues"), load):
        out.append(told)
    if told := queued_past_priority(effects.get("queued_by_priority")):
        out.append(told)
    if told := left_by_races(effects.get("short_claims"), summary["jobs"]["created"]):
        out.append(told)
    if busy:
        out.append(busy)
    return out


def _saturated(sat: dict[str, Any] | None, end: float) -> str | None:
    """The saturation's sentence, where it is long enough to tell (see ``SATURATED``)."""
    if sat and sat.get("longest") and end and sat["most_waiting"] >= sat["threads"] and (
            sat["longest"] >= min(SATURATED, SATURATED_SHARE * end)
            or sat["time"] >= 2 * SATURATED_SHARE * end):  # (in short stretches, half the run)
        return (f"The executor was saturated for {_s(sat['time'])} of the run's "
                f"{_s(end)}: every one of its {sat['threads']:,} threads busy while due "
                f"jobs waited; the longest stretch from t={_s(sat['longest_from'])} for "
                f"{_s(sat['longest'])}, with up to {sat['most_waiting']:,} waiting.")
    return None


def _who(phases: dict[str, Any], first: bool = False) -> str:
    """The nodes whose polls ``phases`` are: "the 3 nodes", or the set of them that alone
    runs some handlers, named (``first``: to begin a sentence)."""
    who = group_words(phases.get("group") or [""] * phases["nodes"], phases.get("handlers"))
    return _upper(who) if first else who


def _paces(imb: dict[str, Any]) -> str:
    """The nodes' poll intervals, which differ, and how often each one's poll came first
    after a job fell due: the cause of the spread (``imbalance`` why "poll_intervals"), or
    one of them where a node that polled first had no thread free."""
    every, first = imb["poll_interval"], imb["first_poll_share"]
    fits = imb["why"] == "poll_intervals"
    return (" The nodes poll at different intervals ("
            + ", ".join(f"{n} every {_s(t)}" for n, t in every.items())
            + "): whoever polls first after a job falls due takes it"
            + ("" if fits else " if it has a thread free") + ", and "
            f"{imb['most']}'s poll was the first after {_pct(first[imb['most']])} of the jobs "
            f"that fell due with a thread free, {imb['least']}'s after "
            f"{_pct(first[imb['least']])}.")


def _fed(imb: dict[str, Any]) -> str:
    """A service window whose executions one node took (``imbalance`` why "fault_window"):
    calls that failed at once freed its threads at once, and it claimed again each time."""
    w, most = imb["window"], imb["most"]
    state = "was down" if w["kind"] == "outage" else "browned out"
    line = (f" {most} ran {w['most']:,} of the {w['executions']:,} executions started while "
            f"{w['what']} {state} (t={_s(w['from'])} to {_s(w['to'])})")
    if w["most_failed"] >= 0.5 * w["most"]:
        took = ("kept taking the rows as they fell due while the others' polls found few "
                "left" if w["most"] >= 0.8 * w["executions"] else
                f"claimed again each time and took {_pct(w['most'] / w['executions'])} of them")
        return line + (f", {w['most_failed']:,} of them failed calls: a call that fails at "
                       f"once frees its thread at once, and a node whose claim came back "
                       f"full claims again as soon as a thread frees, so {most} {took}.")
    return line + (": its threads freed first, and a node whose claim came back full claims "
                   "again as soon as a thread frees.")


def _busier(imb: dict[str, Any], nodes: dict[str, Any]) -> str:
    """Where the node that ran fewer executions kept its threads busier than the one that
    ran more (runs of different lengths: fast failures in an outage), that counterweight."""
    most, least = (nodes.get(imb[k]) or {} for k in ("most", "least"))
    a, b = most.get("busy_share"), least.get("busy_share")
    if a is None or b is None or b <= a:
        return ""
    return (f" By thread time, though, {imb['least']} was the busier ({100 * b:.3g} % of "
            f"its threads' time, against {100 * a:.3g} %): {imb['most']}'s executions were "
            f"shorter.")


def _lock_step(phases: dict[str, Any]) -> str:
    T, n = phases["interval"], phases["nodes"]
    mean = phases.get("start_delay_mean_free", phases.get("start_delay_mean"))
    to_poll = phases.get("wait_for_poll_free")
    if mean and to_poll is not None and to_poll < SMALL_PART * mean and \
            (phases.get("started_by_poll_free") or 0.0) < SMALL_PART:
        # a backlog decided the waits: the polls' phases (and jitter) change little of them
        return (f"{_who(phases, True)} polled in lock-step (at the end their polls fell "
                f"within {_s(phases['spread_end'])} of the {_s(T)} interval), but it "
                f"decided little here: jobs due with a thread free waited a mean "
                f"{_s(to_poll)} for a poll, of the {_s(mean)} they waited to start; the rest "
                f"they waited behind the jobs claimed before them, which no poll_jitter "
                f"shortens.")
    if phases.get("from_start"):
        line = (f"{_who(phases, True)} polled in lock-step from the start: their first "
                f"polls fell within {_s(phases['spread_start'])} of one another in the "
                f"{_s(T)} interval and stayed within {_s(phases['spread_end'])}.")
    else:
        line = (f"{_who(phases, True)} polled in lock-step: at the start their polls "
                f"spread over {_s(phases['spread_start'])} of the {_s(T)} interval, at the "
                f"end over {_s(phases['spread_end'])} (independent phases: "
                f"{_s(phases['spread_independent'])}). A node whose claim comes back full "
                f"polls again as soon as a thread frees and starts its interval anew, just "
                f"behind the others"
                + (", and with no jitter nothing pulls the phases apart again" if
                   not phases["jitter"] else "") + ".")
    if mean is not None and T / (n + 1) / 2 <= mean <= T:  # a wait the polls decide
        line += _poll_waits(phases, mean)
    if not phases["jitter"] and not phases.get("from_start"):
        line += _jitter(phases, mean)
    if not phases.get("from_start") and _near_lock_step(phases):
        line += (" The verdict is near its bounds (the phases' spread, or the wait for a "
                 "poll against 1.25 T/(N+1)): at another seed the same nodes may read as "
                 "apart; `--seeds 10` shows how often.")
    return line


#: lock-step is told in a line where the wait for a poll is under this share of the jobs'
#: wait to start and under this share of them started within an interval of that poll (a
#: newcomer's 5,000-job batch: 3.4 s of 624 s, and its jitter advice changed no wait at
#: seeds 1-3; a backlog and then a stream of 2,400 had the mean hide the stream's waits,
#: which jitter cut by 43 %)
SMALL_PART = 0.1

#: a lock-step verdict is one seed's where the end spread is this share of its bound or
#: more, or the wait for a poll under ``1 / NEAR_LOCK_STEP`` times its bound (a newcomer's
#: two nodes read lock-step at one seed of eight, their waits 0.74-0.90 s against 0.833 s)
NEAR_LOCK_STEP = 0.8


def _near_lock_step(phases: dict[str, Any]) -> bool:
    wait = phases.get("wait_for_poll_free")
    wait = phases.get("start_delay_mean_free") if wait is None else wait
    bound = 1.25 * phases["interval"] / (phases["nodes"] + 1)
    return phases["spread_end"] >= NEAR_LOCK_STEP * LOCK_STEP * phases["spread_independent"] \
        or (wait is not None and wait * NEAR_LOCK_STEP < bound)


#: what jitter does: it keeps the phases apart (the wait for a poll under T/(N+1) at 4 and
#: 10 jobs/s on three nodes and at 4 on two, seeds 0-5); not the wait behind full claims
JITTER = " executor.poll_jitter: 0.5 keeps them apart."
#: where the first poll's claim came back full: jitter shortened the wait for a poll and
#: lengthened the wait after it, and mostly the longest (three default nodes at 10 jobs/s
#: of 500 ms and at 2 jobs/s of a median 1 s failing 30 %, seeds 0-11 of each: the wait
#: after it longer in 24 runs of 24, the longest in 22, the mean -22 % to +8 %); polls
#: every 5 s shortened both (a mean of 1.6-2.2 s against 3.7-4.9 s)
BEHIND = (" executor.poll_jitter: 0.5 keeps them apart and shortens the wait for a poll, but "
          "where the first poll's claim comes back full, as here, jobs wait longer behind "
          "the full claims after it, and the longest wait mostly grows (its intervals run up "
          "to 1.5 times the poll_interval); a shorter poll_interval shortens both.")


def _jitter(phases: dict[str, Any], mean: float | None) -> str:
    """The jitter advice: what it keeps apart, and where the claims came back full what it
    does not shorten."""
    after, full = phases.get("wait_after_poll_free"), phases.get("first_poll_full_free")
    if mean and after is not None and full is not None and full >= 0.5 and \
            after >= 0.1 * mean and not phases.get("queue_size"):
        return BEHIND
    return JITTER


def _poll_waits(phases: dict[str, Any], mean: float) -> str:
    """The waits the polls decide: of the jobs due with a thread free, the mean start delay,
    split at the first poll after they fell due where the run has it; those due while every
    thread was busy apart."""
    T, n = phases["interval"], phases["nodes"]
    busy = phases.get("due_while_busy") or 0
    whose = "Jobs due while a thread was free" if busy else "Jobs"
    against = (f"against {_s(T / (n + 1))} for independent phases (T/(N+1)) and {_s(T / 2)} "
               f"in full lock-step (T/2)")
    to_poll = phases.get("wait_for_poll_free")
    if to_poll is None:
        line = f" {whose} waited a mean {_s(mean)} to start, {against}"
    else:
        sooner = "" if phases.get("polled_free") == 1 else " (or their start, where sooner)"
        line = (f" {whose} waited a mean {_s(mean)} to start: {_s(to_poll)} for the first "
                f"poll after they fell due{sooner}, {against}")
        after, full = phases.get("wait_after_poll_free"), phases.get("first_poll_full_free")
        if after is not None and after >= 0.1 * mean and phases.get("queue_size"):
            line += (f", then {_s(after)} more after it (in a node's local queue, or until a "
                     f"later claim took them)")
        elif after is not None and full is not None and full >= 0.5 and after >= 0.1 * mean:
            line += (f", then {_s(after)} more: {_pct(full)} of those polls came back full, "
                     f"their rows taken before these")
    if busy:  # (a thread as well as a poll: said only where they did wait longer)
        waited = phases["start_delay_mean_busy"]
        return line + (f"; the {busy:,} due while every thread was busy waited "
                       f"{'a mean ' if busy != 1 else ''}"
                       f"{_s(waited)}" + (", for a thread as well as a poll."
                                          if waited is not None and waited > mean else "."))
    return line + "."


def bunched(phases: dict[str, Any]) -> str | None:
    """Phases not in lock-step whose jobs due with a thread free still waited for a poll a
    quarter longer than independent phases give, or more, and for half their start delay
    or more: what the polls made of the wait (None where they did not)."""
    T, n = phases["interval"], phases["nodes"]
    mean = phases.get("start_delay_mean_free", phases.get("start_delay_mean"))
    to_poll = phases.get("wait_for_poll_free")
    if phases["lock_step"] or mean is None or to_poll is None or \
            phases.get("spread_end") is None or to_poll < max(1.25 * T / (n + 1), mean / 2):
        return None  # (no spread at the end: under two nodes up, whose phases say nothing)
    line = (f"The polls made much of the wait though their phases were not in lock-step "
            f"({_who(phases)}' polls spread over {_s(phases['spread_end'])} of the {_s(T)} "
            f"interval at the end; independent phases: {_s(phases['spread_independent'])})."
            + _together(phases) + _poll_waits(phases, mean))
    if not phases["jitter"]:
        line += _jitter(phases, mean)
    return line


def _together(phases: dict[str, Any], wait: bool = True) -> str:
    """The nodes that polled at one phase, what that made of the wait for a poll (``wait``)
    and what their claims met (empty if no nodes polled together)."""
    groups = phases.get("together") or []
    if not groups:
        return ""
    T, n, m = phases["interval"], phases["nodes"], phases["phases_apart"]
    names = [" and ".join([", ".join(g[:-1]), g[-1]] if len(g) > 2 else g) for g in groups]
    line = (f" But {names[0]} polled together" + "".join(f", as did {w}" for w in names[1:])
            + f", within {_s(TOGETHER * T)} of each other for most of the run")
    if wait:
        line += (f", so the {n} nodes polled at {m} phases ({_s(T / (m + 1))} for a poll, "
                 f"T/({m}+1))")
    met = [f"{k:,} {what}" for k, what in (
        (phases.get("together_conflicts") or 0, "of their claims of jobs failed on a conflict"),
        (phases.get("together_lost") or 0, "rows they asked for went to another node"))
        if k]
    return line + (", and their claims met: " + ", and ".join(met) if met else "") + "."


def claims_met(phases: dict[str, Any]) -> str | None:
    """Nodes at one phase whose claims met (a conflict, or rows lost to another node), told
    on their own where the wait did not make them worth a sentence (None where none met)."""
    if not (phases.get("together_conflicts") or phases.get("together_lost")):
        return None
    return _together(phases, wait=False).strip().removeprefix("But ")


def full_claims(phases: dict[str, Any], load: dict[str, Any] | None) -> str | None:
    """Nodes with no local queue whose jobs due with a thread free waited a quarter longer
    than independent phases give for a poll, or more, half of it or more after the first
    poll after they fell due, which came back full at least half the time: the rows each
    claim left for later ones (None where not, or where the run was overloaded and its
    backlog says why)."""
    T, n = phases["interval"], phases["nodes"]
    mean = phases.get("start_delay_mean_free", phases.get("start_delay_mean"))
    after, full = phases.get("wait_after_poll_free"), phases.get("first_poll_full_free")
    if phases["lock_step"] or phases.get("queue_size") != 0 or mean is None or \
            after is None or full is None or full < 0.5 or mean < 1.25 * T / (n + 1) or \
            after < mean / 2 or (load or {}).get("verdict") == "overloaded":
        return None
    return ("Claims that came back full made much of the wait." + _poll_waits(phases, mean)
            + " A node with no local queue claims only as many rows as it has idle threads; "
            "the rest wait for its next claim, when a thread frees, or for another node's "
            "poll.")


#: claims that left due rows racing another node's are told from this many, where they left
#: this share of the jobs or more, or where a slow database made them twice as frequent as
#: the rest of the run (at 2 % of the jobs, a poll interval's wait each, they cost a
#: run of 5 jobs/s on three nodes a few per cent of its waits: not worth a sentence)
SHORT_CLAIMS, SHORT_ROWS = 10, 0.05


def left_by_races(q: dict[str, Any] | None, jobs: int) -> str | None:
    """Claims that came back short racing another node's claim, leaving due rows in the
    table (``analysis/short_claims.py``), and where a slow database had twice as many of
    them a second as the rest of the run, that; None where too few to matter."""
    if not q or q["claims"] < SHORT_CLAIMS:
        return None
    out, slow = q.get("outside") or {}, ""
    for w in list((q.get("windows") or {}).values())[:1]:
        rate_in = w["claims"] / w["span"] if w["span"] else 0.0
        rate_out = out["claims"] / out["span"] if out.get("span") else None
        if w["claims"] >= SHORT_CLAIMS and (rate_out is None or rate_in >= 2 * rate_out):
            slow = (f" {w['claims']:,} of them came while the database was slow"
                    + (f" ({rate_in:.2g} a second, against {rate_out:.2g} the rest of the "
                       f"run)" if rate_out is not None else "")
                    + ": slower statements are in flight together more often.")
    if not slow and q["rows"] < SHORT_ROWS * max(jobs, 1):
        return None
    again = (f"; its node claimed again only at its next poll, a mean "
             f"{_s(q['next_claim_mean'])} later" if q.get("next_claim_mean") else "")
    line = (f"{q['claims']:,} claims came back with fewer rows than they asked, racing "
            f"another node's claim, while due rows were left in the table ({q['rows']:,} "
            f"rows in all): a claim picks its rows as its statement starts, and where "
            f"another claim in flight locked them first it returns without them and looks "
            f"no further{again}.{slow}")
    if q.get("strategy") == "guarded_update":  # it waits for the rows another claim holds
        line += (" executor.acquisition: skip_locked takes the next rows past those another "
                 "claim holds.")
    return line
