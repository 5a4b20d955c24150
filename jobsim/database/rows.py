"""The jobs tables' names and their rows.

A row is a job; a table is a state (Flowable's way): ``job`` holds what may run,
``timer_job`` timers not yet moved, ``deadletter_job`` what ran out of retries. Each write
bumps the row's ``version``, which never goes down. ``Locked`` is what locking one row
reports.
"""

from __future__ import annotations

import math
from typing import NamedTuple

JOB, TIMER, DEADLETTER, SUSPENDED = "job", "timer_job", "deadletter_job", "suspended_job"
INCIDENT, FAILED = "incident", "failed"
TABLES = (JOB, TIMER, DEADLETTER, SUSPENDED, INCIDENT, FAILED)
ACQUIRABLE = (JOB, TIMER)
ORDERS = ("id", "due", "created", "priority", "aging")
#: when an expired lock frees its row: ``claim`` — the next claim's WHERE treats it as free
#: (the lesson, failsafe-executor, Zeebe's job timeout); ``reset`` — only a reset thread
#: clears it (Flowable's ResetExpiredJobsRunnable, db-scheduler's dead-execution detection,
#: Oban's Lifeline), since the claim selects ``LOCK_EXP_TIME_ IS NULL``; ``never`` — nothing
#: does (the Zeebe-like server: the deadline is informational)
LOCK_EXPIRY = ("claim", "reset", "never")


class Row:
    """One job row. Columns as in Flowable's ACT_RU_JOB, plus what policies need."""

    __slots__ = ("id", "kind", "handler", "priority", "created", "due", "retries", "failures",
                 "locked_by", "lock_until", "version", "table", "error", "stamp", "queue",
                 "fetched", "last_delay")

    def __init__(self, id: int, kind: str, handler: str, priority: int, created: float,
                 due: float, retries: int, queue: str | None = None):
        self.id = id
        self.kind = kind
        self.handler = handler
        self.priority = priority
        self.created = created
        self.due = due
        self.retries = retries
        self.failures = 0
        self.locked_by: str | None = None
        self.lock_until = -math.inf
        self.version = 0
        self.table = JOB
        self.error: str | None = None
        self.stamp = 0
        #: a serial queue (failsafe-executor's registerQueue): one of its rows runs at a time
        self.queue = queue
        #: locks taken so far, its lock generation: it only goes up, so an execution's write
        #: can tell its own claim from a later one — counted at fetch (Oban's ``attempt``,
        #: River's), its final write; with fencing, its side effect (the run's token)
        self.fetched = 0
        #: the wait before its latest retry (a decorrelated jitter grows from it); ``None``
        #: before its first failure and after an operator's retry
        self.last_delay: float | None = None

    def lock_valid(self, now: float) -> bool:
        """True while a lock is held and has not expired (expired means ``lock_until < now``)."""
        return self.locked_by is not None and self.lock_until >= now

    def eligible(self, now: float, expiry: bool = True) -> bool:
        """The guard of every acquisition: due, and unlocked or (when expired locks free
        their row at the claim, ``expiry``) expired."""
        return self.due <= now and (self.locked_by is None or
                                    (expiry and self.lock_until < now))

    def __repr__(self) -> str:
        return (f"Row(id={self.id}, {self.table}, due={self.due}, locked_by={self.locked_by}, "
                f"lock_until={self.lock_until}, v={self.version}, retries={self.retries})")


class Locked(NamedTuple):
    """The outcome of locking one row: who held it before and whether that lock was valid."""

    id: int
    previous_owner: str | None
    previous_valid: bool
    lock_until: float
    handler: str
    kind: str
    #: the row's ``fetched`` after this lock: its lock generation, the run's fencing token
    fetched: int = 0
