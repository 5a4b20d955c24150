"""Serial queues: the tasks of one queue run one after another. When one ends, the node takes
the queue's next waiting task in the same statement; if none is set aside, the queue is free
for any claim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .host import Host


def next_in_queue(node: Host, queue: str, now: float) -> None:
    """A task of a serial queue ended here: this node takes the queue's next waiting
    task in the same statement, as failsafe-executor's queue poller runs them one after
    another; if none is set aside, the queue is free for any claim (wake idle nodes)."""
    db = node.db
    if not db.locked(node.name, db.store.hand_over(queue, node.name, now,
                                                   now + node.cfg.lock_time, db.row_locks)):
        db.touch()
