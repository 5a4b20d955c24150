"""The words of a report: the scenario's own explanation (the comment its file opens with)
and a few sentences made from a run's figures — what failed, what ran twice and why, how
late the worst job was — so that report.md says what the run shows before its tables."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .effect_words import effect_sentences, seconds as _seconds
from .fault_words import fault_sentences

#: what each cause of a double run means, as a sentence's end ("… because …")
CAUSE_WORDS = {
    "unsafe_acquisition": "two nodes acquired the job at once (a claim that does not "
                          "re-check the row as it writes it: unguarded, or a read then a "
                          "write)",
    "lock_expired": "the job's lock expired while it still ran or waited in a node's queue, "
                    "and another claim took it",
    "pause": "the job's lock expired while its holder was paused, and another node took it "
             "while the paused node still held it",
    "crash": "a node crashed while it ran the job (or before its end was written), and the "
             "job ran again: on another node, or on the same one after its restart",
    "partition": "a node cut off from the database ran the job to its end but could not "
                 "write its completion, and once the job's lock expired another claim ran it "
                 "again",
    "server_restart": "the server restarted and handed out its activated jobs again",
    "failed_after_effect": "a run failed after its side effect and the retry repeated it",
    "ambiguous_timeout": "a call timed out at its caller but the service went on and made "
                         "the effect, and the retry made it again",
    "clock_skew": "a node whose clock disagreed took a job whose lock was still live by true "
                  "time (a clock ahead saw it expired; one behind had written it short)",
    "unexplained": "no fault of the scenario explains it (a bug to report)",
}


#: said once after the causes when a pause is one of them: the trace cannot tell it apart
PAUSE_CAVEAT = ("A run caught in a pause is stretched by it, so one that would have outlasted "
                "its lock unpaused is counted under the pause, not under the lock's expiry: "
                "the scenario without the pause tells how many the pause alone caused.")

#: how a named job ended, as a sentence's end
ENDS = {"dead_lettered": "went to the dead-letter table", "failed": "was kept as failed",
        "pending": "was still waiting at the end", "incident": "ended in an incident",
        "withdrawn": "was withdrawn by its boundary timer", "cancelled": "was cancelled",
        "lost": "was LOST"}


def explanation(scenario: Any) -> str:
    """The comment the scenario's file opens with, as Markdown paragraphs ("" if it has none
    or the scenario was not read from a file)."""
    try:
        text = Path(scenario.source).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return ""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].strip())
    return comment_markdown(lines)


#: a comment line that opens a list item: "- ", "* ", "1. " or "1) "
_ITEM = re.compile(r"([-*]|\d+[.)])\s+\S")


def comment_markdown(lines: list[str]) -> str:
    """Comment lines (their ``#`` taken off) as Markdown: blank lines part paragraphs, and
    a line that opens a list item ("- ", "* ", "1. ") starts one, its following lines joined
    to it, so that a list stays a list (it had read as one paragraph)."""
    blocks: list[list[str]] = [[]]  # a paragraph: one entry; a list: an entry per item
    listing = False
    for ln in lines:
        if not ln:
            blocks.append([])
            listing = False
            continue
        item = _ITEM.match(ln) is not None
        if item and not listing and blocks[-1]:
            blocks.append([])  # a list right after a paragraph's line: a block of its own
        if item or not blocks[-1]:
            blocks[-1].append(ln)
        else:
            blocks[-1][-1] += " " + ln  # the paragraph's or the item's next line
        listing = listing or item
    return "\n\n".join("\n".join(" ".join(entry.split()) for entry in b) for b in blocks if b)


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count:,} {one if count == 1 else (many or one + 's')}"


def _were(count: int) -> str:
    return "was" if count == 1 else "were"


def _stranded(recovery: dict[str, Any], summary: dict[str, Any]) -> str:
    """The jobs the crashes stranded: by crash where there were several, when they were
    taken up again, and why then: their locks ran out (a restarted node does not take back
    what it held)."""
    late, n = recovery.get("delay") or {}, recovery["stranded_jobs"]
    crashes = list((recovery.get("crashes") or {}).values())
    lost = recovery.get("unrecovered") or 0
    if sum(c["stranded"] for c in crashes) < n:  # more than the first 20 crashes
        head = f"{len(crashes):,} crashes or more stranded {_n(n, 'job')}"
    elif len(crashes) > 1:
        head = (f"{len(crashes):,} crashes stranded {_n(n, 'job')} (" + ", ".join(
            f"{c['stranded']:,} at t={_seconds(c['at'])} on {c['node']}" for c in crashes)
            + ")")
    elif crashes:
        head = (f"A crash of {crashes[0]['node']} at t={_seconds(crashes[0]['at'])} stranded "
                f"{_n(n, 'job')}")
    else:
        head = f"A crash stranded {_n(n, 'job')}"
    if lost:
        return head + ((("; it was never taken up again" if n == 1 else
                         "; none of them was taken up again") if lost == n else
                        f"; {lost:,} of them were never taken up again") + ".")
    if not late.get("n"):
        return head + "."
    back = (f"; it was taken up again after {_seconds(late['max'])}" if n == 1 else
            f"; they were taken up again after {_seconds(late['max'])} at most")
    lock = recovery.get("lock_time")
    if lock and late["max"] >= 0.5 * lock:  # what they waited for was the lock
        every = recovery.get("reset_interval")
        back += (f", once {'its lock' if n == 1 else 'their locks'} ran out (lock_time "
                 f"{_seconds(lock)}" + (f", then the reset thread's next pass, every "
                                        f"{_seconds(every)}" if every else "") + ")")
        windows = ((summary.get("effects") or {}).get("faults") or {}).get("windows") or {}
        up = sorted({(w["what"], w["to"] - w["from"]) for w in windows.values()
                     if w["kind"] == "down" and w["to"] - w["from"] < late["max"] and
                     any(c["node"] == w["what"] and c["at"] == w["from"] for c in crashes)})
        if up and len({c["node"] for c in crashes}) == 1:
            back += (f": {up[0][0]} was back after {_seconds(up[0][1])}, but a node that "
                     f"restarts does not take back what it held")
    return head + back + "."


def _given_up(gave: dict[str, Any], jobs: dict[str, Any]) -> str:
    """The jobs given up after their effect took place (``given_up_with_effect``), and what
    moving them back does: makes it again, unless their calls send the job's key."""
    ended = jobs["dead_lettered"] + jobs.get("incident", 0) + jobs.get("failed", 0)
    n, twice, keyed = gave["jobs"], gave["more_than_once"], gave.get("keyed") or 0
    line = ("The job given up" if ended == 1 else f"All {_n(ended, 'job')} given up"
            if n == ended else f"{n:,} of the {_n(ended, 'job')} given up")
    line += " had already taken effect"
    if twice:
        line += f" ({twice:,} of them more than once)" if n > 1 else " more than once"
    them = "it" if n == 1 else "them"
    if keyed == n:
        return line + (f": {'its call sends' if n == 1 else 'their calls send'} the job's "
                       f"idempotency key, so moving {them} back within the service's "
                       f"idempotency_window is answered with the first answer, not a "
                       f"second effect.")
    line += f": moving {them} back makes that effect again"
    if keyed:
        line += f" for the {n - keyed:,} whose calls send no job key"
    elif gave.get("by_call", 1):
        line += (", unless each call sends a key the service still remembers "
                 "(idempotency_key: job, within its idempotency_window)")
    return line + "."


def sentences(summary: dict[str, Any]) -> list[str]:
    """What one run shows, in a few sentences from its summary."""
    jobs = summary["jobs"]
    out = [f"{_n(jobs['created'], 'job')} {_were(jobs['created'])} created and "
           f"{jobs['done']:,} done"
           + (f"; {_n(jobs['dead_lettered'], 'job')} went to the dead-letter table"
              if jobs["dead_lettered"] else "")
           + (f", {_n(jobs['incident'], 'incident')} raised" if jobs.get("incident") else "")
           + (f", {jobs['failed']:,} kept as failed" if jobs.get("failed") else "")
           + (f", {jobs['pending']:,} still waiting at the end" if jobs["pending"] else "")
           + (f", {_n(jobs['lost'], 'job')} LOST" if jobs["lost"] else "") + "."]
    gave = summary.get("given_up_with_effect") or {}
    if gave.get("jobs"):
        out.append(_given_up(gave, jobs))
    execs, fails = summary["executions"], summary["failures"]
    out.append(f"They took {_n(execs, 'execution')}"
               + (f", {fails:,} of them failed and {_were(fails)} retried or given up" if fails else
                  ", none failed") + ".")
    dup = summary["duplicate_executions"]
    if dup["total"]:
        causes = sorted(((n, c) for c, n in dup["by_cause"].items() if n), reverse=True)
        why = "; ".join(f"{n:,} because {CAUSE_WORDS.get(c, c)}" for n, c in causes)
        out.append(f"{_n(dup['total'], 'execution')} ran a job that another execution also "
                   f"ran: {why}.")
    else:  # (a retry runs a job again after a failure: not a double run, but say so)
        out.append("Apart from its retries, no job ran twice." if fails else "No job ran twice.")
    side = summary["duplicate_side_effects"]
    if side["total"]:  # by their own causes: a timeout's effect needs no second run
        causes = sorted(((n, c) for c, n in side["by_cause"].items() if n), reverse=True)
        out.append(f"{_n(side['total'], 'side effect')} happened twice: " + "; ".join(
            f"{n:,} because {CAUSE_WORDS.get(c, c)}" for n, c in causes) + ".")
    elif dup["total"]:
        out.append("No side effect happened twice.")
    if dup["by_cause"].get("pause") or side["by_cause"].get("pause"):
        out.append(PAUSE_CAVEAT)
    fenced = summary.get("side_effects_refused", 0)
    if fenced:
        out.append(f"{_n(fenced, 'side effect')} of a run whose job a later claim had taken "
                   f"{_were(fenced)} refused by {'its' if fenced == 1 else 'their'} fencing "
                   f"token{'' if fenced == 1 else 's'} (no effect; the "
                   f"run{'' if fenced == 1 else 's'} failed).")
    ignored = summary.get("operations_ignored", 0)
    if ignored:
        out.append(f"{_n(ignored, 'operation')} named a job "
                   f"{'it' if ignored == 1 else 'they'} could not act on and did nothing "
                   "(the transcript's WARNING lines, and trace.csv's operation_ignored "
                   "events, say where each job was).")
    rejected = summary.get("completions", {}).get("rejected_by_guard", 0)
    if rejected:
        out.append(f"{_n(rejected, 'completion')} of a node that no longer held the job "
                   f"{_were(rejected)} refused by the owner guard.")
    delay = summary["latency"]["start_delay"]
    if delay.get("n"):
        few = " (fewer than 20 jobs: read it as a list, not a distribution)" \
            if delay["n"] < 20 else ""
        out.append(f"Jobs started a median {_seconds(delay['p50'])} after they were due and "
                   f"the latest {_seconds(delay['max'])} after{few}.")
    for job, f in sorted((summary.get("named") or {}).items()):  # the jobs a scenario names
        if isinstance(f.get("start_delay"), (int, float)):
            runs = f.get("executions", 1)
            end = f.get("outcome")
            out.append(f"The job named {job} started {_seconds(f['start_delay'])} after it was "
                       f"due" + (f", ran {runs:,} times" if runs != 1 else "")
                       + (f" and {ENDS.get(end, 'ended ' + str(end))}" if end and
                          end != "done" else "") + ".")
        elif f.get("outcome"):
            out.append(f"The job named {job} never started: it "
                       f"{ENDS.get(f['outcome'], 'ended ' + str(f['outcome']))}.")
    recovery = summary.get("crash_recovery") or {}
    if recovery.get("stranded_jobs"):
        out.append(_stranded(recovery, summary))
    elif down := {n: f["time_down"] for n, f in (summary.get("nodes") or {}).items()
                  if f.get("time_down")}:  # a crash that found its node idle: said all the same
        who = ", ".join(f"{n} ({_seconds(t)} down)" for n, t in sorted(down.items()))
        out.append(f"No crash stranded a job: {who} held no job under a live lock when "
                   f"{'it' if len(down) == 1 else 'they'} went down.")
    out += fault_sentences((summary.get("effects") or {}).get("faults"),
                           summary.get("end_time"))
    out += effect_sentences(summary)
    broken = [k for k, v in summary["invariants"].items() if v]
    if broken:
        out.append("Invariants broken: " + ", ".join(f"{k} ({summary['invariants'][k]:,})"
                                                     for k in broken) + ".")
    return out
