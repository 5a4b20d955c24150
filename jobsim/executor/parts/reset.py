"""The reset thread: every ``reset_interval`` it unlocks rows whose lock expired, a page at a
time; counted at fetch (a rescue), a row with no attempts left is discarded instead.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K
from ...database.db import StatementFailed
from ...database.store import DEADLETTER

if TYPE_CHECKING:
    from .host import Host


def reset_expired(node: Host) -> Generator[Any, Any, None]:
    """Every ``reset_interval``: find rows whose lock expired, a page of ``reset_page``
    at a time, and unlock them, until a page comes back empty (Flowable's
    ResetExpiredJobsRunnable; retries untouched). When executions are counted at fetch
    (Oban's Lifeline rescue), a row with no attempts left is discarded instead."""
    env, cfg, store, me, trace = node.env, node.cfg, node.db.store, node.name, node.trace
    reason = trace.text("lock expired (reset)")
    while True:
        yield env.timeout(cfg.reset_interval)
        if node.paused is not None:
            yield node.paused
        while True:
            try:
                ids, _ = yield from node.db.run(
                    me, lambda now: store.expired(now, cfg.reset_page))
                if not ids:
                    break

                def reset(now: float, ids: list[int] = ids) -> list[tuple[int, bool]]:
                    out = []
                    for rid in ids:
                        row = store.get(rid)
                        if row is None or row.locked_by is None or row.lock_until >= now:
                            continue  # done, or reset by another node meanwhile
                        if store.count_at_fetch and row.retries <= 0:
                            store.move(rid, DEADLETTER, error="lock expired, no attempts "
                                                              "left")
                            out.append((rid, True))
                        else:
                            store.unlock(rid)
                            out.append((rid, False))
                    return out

                done, _ = yield from node.db.run(me, reset, wakes=True, rows=ids)
            except StatementFailed:
                node.failed("reset expired")
                break
            now = env.now
            for rid, discarded in done:
                if discarded:
                    trace.add(now, K["dead_lettered"], node.code, rid, a=0,
                              text=trace.text("lock expired, no attempts left"))
                    node.world.finished(rid)
                    node.world.job_done()
                else:
                    trace.add(now, K["unlocked"], node.code, rid, text=reason)
