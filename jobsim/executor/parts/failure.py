"""A failed execution: the failure statement, which reschedules the job by its retry policy
or, with no retries left, moves it to where exhausted jobs go (the dead-letter table, an
incident, or failed until an operator acts). Counted at fetch, the failure is guarded by the
fetch it belongs to; a stale one changes nothing.

Where the worker sends the retries (a broker stores them as sent), the handler's
``fail_retries`` says what it sends: one less, the same (the job is handed back without using
one), or none (0: exhausted at once). A handler's ``fail_wait`` is the worker's wait before
the statement, the job still its own.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K
from ...database.db import StatementFailed
from ...database.store import DEADLETTER, FAILED, INCIDENT, JOB, TIMER
from ..retry import Decision
from .serial import next_in_queue

if TYPE_CHECKING:
    from .host import Host


def fail(node: Host, jid: int, hname: str, attempt: int, error: str,
          fetched: int = 0) -> Generator[Any, Any, None]:
    world, store, me = node.world, node.world.store, node.name
    owner = me if node.cfg.complete_guard == "owner" else None
    policy = world.scenario.retry_for(me, hname)
    stream = world.jitter_stream(me)

    terminal = {"incident": INCIDENT, "failed": FAILED}.get(node.cfg.exhausted, DEADLETTER)
    code_of = {"dead_letter": 0, "incident": 1, "failed": 2}[node.cfg.exhausted]
    # Flowable: a failed job waits for its retry in the timer table
    table = TIMER if node.timer_table else JOB
    # counted at fetch (Oban): the claim already took this execution off the retries
    counted = 1 if store.count_at_fetch else 0
    handler = world.handlers[hname]
    form = handler.fail_retries
    waited = 0.0
    if handler.fail_wait is not None:
        # the worker waits before it fails the job, by the retries the job has used
        # (``attempt = 3 - job.retries``); the job stays its own meanwhile
        row = store.get(jid)
        used = world.retries[hname] - row.retries if row is not None else attempt - 1
        waited = handler.fail_wait.delay(max(used, 0) + 1, stream)
        if waited > 0:
            yield node.env.timeout(waited)
            if node.paused is not None:
                yield node.paused

    def apply(now: float) -> tuple[str, int, float]:
        row = store.get(jid)
        if row is None or row.table not in (JOB, TIMER) or (
                owner and row.locked_by != owner) or (
                counted and (row.locked_by != me or row.fetched != fetched)):
            # e.g. withdrawn: the server answers 404. Counted at fetch, the failure
            # belongs to the fetch that counted it (Oban's error_job: ``WHERE state =
            # 'executing'``, with the job's attempt): once a rescue or an operator's
            # move/retry has released the row, or a claim has fetched it again,
            # ``row.retries`` is no longer what this fetch left, and a stale failure must
            # not reschedule (or dead-letter) the row from it
            return "stale", 0, 0.0
        previous = row.last_delay  # what a decorrelated jitter grows from
        if form == "decrement":
            d = policy.on_failure(row.retries + counted, row.failures + 1, stream, previous,
                                  first=row.error is None)
        elif form == "unchanged":  # job.retries as it is: the failure uses none
            d = Decision(False, row.retries,
                         policy.backoff.delay(row.failures + 1, stream, previous))
        else:  # omitted: counts as 0
            d = Decision(True, 0, 0.0)
        if d.dead:
            store.move(jid, terminal, error=error)
            out = "dead", 0, 0.0
        else:
            # the lesson's ``due += backoff`` counts from the job's due time (which may leave
            # it due at once); every other system counts from the failure
            due = (row.due if policy.backoff_from == "due" else now) + d.delay
            store.reschedule(jid, due, d.left, error, table=table, delay=d.delay)
            out = "retry", d.left, due
        if row.queue is not None:  # a failed task does not block its queue
            next_in_queue(node, row.queue, now)
        return out

    try:
        (what, left, due), _ = yield from node.db.run(me, apply, wakes=True, rows=(jid,))
    except StatementFailed:
        node.failed("fail", jid, attempt)
        return
    trace, now, text = node.trace, node.env.now, node.trace.text(error)
    wait_ms = round(waited * 1000.0)
    if what == "retry":
        trace.add(now, K["retry_scheduled"], node.code, jid, attempt, a=left, c=wait_ms,
                  x=due, text=text)
    elif what == "dead":
        trace.add(now, K["dead_lettered"], node.code, jid, attempt, a=code_of, c=wait_ms,
                  text=text)
        world.finished(jid)
        world.job_done()
    else:
        trace.add(now, K["stale_write"], node.code, jid, attempt, text=trace.text("fail"))
