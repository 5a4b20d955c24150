"""The unacquirer: a job handed to a full local queue is refused (Flowable's
RejectedExecutionException) and unlocked again in a statement of its own, for any node's
acquisition to take later.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K
from ...database.db import StatementFailed

if TYPE_CHECKING:
    from .host import Host


def reject(node: Host, jid: int) -> None:
    """The pool refused the job (RejectedExecutionException): unacquire it in a new
    transaction, without re-hinting; any node's acquisition takes it later."""
    node.rejected += 1
    node.rejects.append(jid)
    ev, node.reject_wake = node.reject_wake, None
    if ev is not None:
        ev.succeed()


def unacquirer(node: Host) -> Generator[Any, Any, None]:
    """Unacquire rejected jobs (one statement for those pending at once)."""
    env, store, me, text = node.env, node.db.store, node.name, node.trace.text("queue full")
    while True:
        if not node.rejects:
            node.reject_wake = env.event()
            yield node.reject_wake
        ids, node.rejects = node.rejects, []
        try:
            done, _ = yield from node.db.run(
                me, lambda now: [rid for rid in ids if store.unlock(rid, me)], wakes=True,
                rows=ids)
        except StatementFailed:
            node.failed("unacquire")
            continue
        for rid in done:
            node.trace.add(env.now, K["unlocked"], node.code, rid, text=text)
