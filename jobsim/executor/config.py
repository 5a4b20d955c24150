"""The frozen configuration of a run: what a validated scenario becomes.

These dataclasses know nothing of YAML; ``scenario`` builds them from a file (with every
check), and a test or notebook may build them directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.dists import ZERO, Distribution
from ..database.cpu import Timing
from .handlers import Handler
from .retry import ListBackoff, RetryPolicy
from .service_spec import ServiceSpec

WAKEUPS = ("poll", "notify", "long_poll", "ticks")
HEARTBEAT_SCOPES = ("running", "held")
EXHAUSTED = ("dead_letter", "incident", "failed")
COMPLETE_GUARDS = ("none", "owner")
QUEUE_FULL = ("queue", "unacquire")
#: when a node claims: whenever it has room, or only once it holds nothing (the lesson's loop)
CLAIM_WHEN = ("room", "empty")
COUNT_ATTEMPT = ("failure", "fetch")
CLOCKS = ("node", "database")
#: the run's start instant when the file gives none (``clock.epoch``): 2026-01-01T00:00:00Z
EPOCH_MS = 1_767_225_600_000
#: how a report's timeline colours executions (``report.timeline_colour``)
TIMELINE_COLOURS = ("outcome", "priority", "handler")


@dataclass(frozen=True)
class DbConfig:
    dialect: str = "atomic"
    latency: Distribution = ZERO
    connections: int | None = None
    isolation: str = "read_committed"
    sqlite_begin: str = "autocommit"
    #: SQLite: a held write lock waited for in a queue, or in the busy handler's sleeps
    sqlite_busy: str = "queue"
    #: the claim statements as measured, per strategy (a profile; ``database/cpu.py``)
    timing: tuple[tuple[str, Timing], ...] = ()
    #: the CPU model: cores shared by the nodes and the server (None: off), and its slice
    cores: int | None = None
    quantum: float = 0.003
    #: PostgreSQL: the seconds a hand-over between client and server saves when the other
    #: cores are busy (a process woken on an idle core is slower: ``database/cpu.py``)
    handover: float = 0.0


@dataclass(frozen=True)
class ExecutorConfig:
    """An executor's settings; a node may override any but ``order``/``aging_rate``, which
    belong to the table's index."""

    acquisition: str = "guarded_update"
    #: the task names (handlers) a node runs; None = all (failsafe-executor's routing)
    handles: tuple[str, ...] | None = None
    wakeup: str = "poll"
    poll_interval: float = 10.0
    #: ``long_poll``: how long the server holds a request that found nothing before it
    #: answers it empty (the worker asks again ``poll_interval`` later)
    long_poll_timeout: float = 10.0
    #: each wait between polls is ``poll_interval × (1 ± poll_jitter)``, drawn uniformly
    poll_jitter: float = 0.0
    #: the wait between a node's start and its first poll (failsafe-executor: 10 s)
    initial_delay: float = 0.0
    batch_size: int = 10
    #: 0: no local queue, a claim asks only for idle threads (no prefetch)
    queue_size: int = 0
    threads: int = 4
    lock_time: float = 300.0
    heartbeat: float | None = None
    heartbeat_scope: str = "running"
    queue_full_wait: float = 5.0
    #: ``room``: a claim whenever the local queue (with none: a thread) has room; ``empty``:
    #: only once the node holds nothing, no job running or waiting — the lesson's loop, which
    #: acquires a batch, runs it through one job after the other, and acquires again
    claim_when: str = "room"
    complete_guard: str = "none"
    exhausted: str = "dead_letter"
    #: Flowable's hint path: a job this node creates is inserted locked by it and handed
    #: to its own pool on commit
    hint: bool = False
    #: a job handed to a full local queue waits there anyway (``queue``), or is unlocked for
    #: any node to take later (``unacquire``: Flowable's RejectedExecutionException path)
    on_queue_full: str = "queue"
    #: how long the acquisition loop waits after a claim failed with an error (40001,
    #: SQLITE_BUSY, Flowable's optimistic-lock rollback of a whole batch)
    error_wait: float = 0.0
    #: a reset thread: every ``reset_interval``, unlock rows whose lock expired, in pages of
    #: ``reset_page`` until none is left (``lock_expiry: reset``)
    reset_interval: float | None = None
    reset_page: int = 1000
    #: a stager: every ``stager_interval``, notify the nodes (as an insert does) when rows
    #: wait to be claimed (Oban's stager)
    stager_interval: float | None = None
    #: Flowable's global acquire lock: one node at a time acquires, in bulk without REV_
    global_lock: bool = False
    global_lock_wait: float = 60.0
    global_lock_poll: float = 0.5
    global_lock_force: float = 600.0
    #: the node's clock: seconds ahead of true time (negative: behind) at the start, and
    #: seconds it gains per second (``database/clocks.py``); used where ``clock`` is node
    clock_offset: float = 0.0
    clock_drift: float = 0.0
    # --- settings of the table, the same for every node -------------------------------------
    order: str = "id"
    aging_rate: float = 0.0
    #: a job's age for ``order: aging`` counts from when it fell ``due`` (time spent not yet
    #: due earns no priority) or from when it was ``created``
    aging_from: str = "due"
    retry: RetryPolicy = RetryPolicy(3, ListBackoff((10.0,)))
    #: see ``store.LOCK_EXPIRY``
    lock_expiry: str = "claim"
    #: timers and failed jobs waiting to retry live in ``timer_job`` and are moved to ``job``
    #: when due by each node's timer acquisition loop (Flowable)
    timer_table: bool = False
    #: when an execution is counted against the job's retries: at its ``failure`` (the
    #: lesson, Flowable) or when its row is claimed, ``fetch`` (Oban, River)
    count_attempt: str = "failure"
    #: a submit with an id that is already in the table does nothing (failsafe-executor's
    #: ``INSERT … WHERE NOT EXISTS``)
    idempotent_submit: bool = False
    #: whose clock a claim compares and writes (lock_until, the expiry guard, due times a
    #: failure sets, heartbeats): each ``node``'s own, or the ``database`` server's
    clock: str = "node"

    @property
    def poll_period(self) -> float:
        """The time between two polls of an idle node: ``poll_interval``, or with
        ``long_poll`` a held request's timeout and the wait before the next one."""
        if self.wakeup == "long_poll":
            return self.long_poll_timeout + self.poll_interval
        return self.poll_interval


@dataclass(frozen=True)
class NodeConfig:
    """A node; ``start_at`` pins when it starts (None: at 0, its first poll at a phase drawn
    uniformly within one poll interval from its own stream, so that nodes start out of
    step; full claims may pull them into lock-step later: ``analysis/effects.py``)."""

    name: str
    executor: ExecutorConfig
    start_at: float | None = None


@dataclass(frozen=True)
class Tick:
    """The fake clock: at ``at``, each of ``nodes`` in turn runs one acquisition round."""

    at: float
    nodes: tuple[str, ...]
    note: str | None = None


@dataclass(frozen=True)
class JobSpec:
    """One explicit job, created at ``at`` and due ``due_in`` later; a ``name`` makes it
    addressable in expectations (``named.<name>.start_delay``)."""

    handler: str
    kind: str = "async"
    id: int | None = None
    at: float = 0.0
    due_in: float = 0.0
    priority: int = 0
    name: str | None = None
    #: the node whose transaction creates it (Flowable's hint path); None: a client
    node: str | None = None
    #: a serial queue (failsafe-executor's registerQueue)
    queue: str | None = None
    #: inserted already failed (failsafe-executor's recordFailure), with this error
    record_failure: str | None = None


RECURRING_MODES = ("fixed_rate", "fixed_delay")


@dataclass(frozen=True)
class RecurringSpec:
    """A recurring schedule: ``count`` jobs, one every ``every`` (``fixed_rate``) or
    ``every`` after the previous one finished (``fixed_delay``), from ``start``."""

    name: str
    handler: str
    every: float
    count: int
    mode: str = "fixed_rate"
    start: float = 0.0
    kind: str = "timer"
    priority: int = 0


OPS = ("==", "!=", "<=", ">=", "<", ">")


@dataclass(frozen=True)
class Expectation:
    """``path op value`` over a run's summary, e.g. ``jobs.lost == 0`` or
    ``named.urgent.start_delay <= 31s`` (durations are compared in seconds)."""

    path: str
    op: str
    value: float | str | bool
    text: str

    def holds(self, actual: object) -> bool:
        v = self.value
        if self.op == "==":
            return actual == v
        if self.op == "!=":
            return actual != v
        if not isinstance(actual, (int, float)) or isinstance(actual, bool) or \
                not isinstance(v, (int, float)):
            return False
        return {"<=": actual <= v, ">=": actual >= v, "<": actual < v,
                ">": actual > v}[self.op]


@dataclass(frozen=True)
class StreamSpec:
    """A Poisson stream (``rate`` per second) or, with ``rate`` None, a burst at ``start``."""

    name: str
    handler: str
    count: int
    rate: float | None = None
    start: float = 0.0
    kind: str = "async"
    due_in: float = 0.0
    priority: int = 0
    #: the nodes whose transactions create its jobs, in turn (Flowable's hint path)
    nodes: tuple[str, ...] = ()
    queue: str | None = None


#: the operator's actions among a scenario's faults (the file's ``operations``, kept after
#: its ``faults``)
OPERATIONS = ("retry", "cancel", "move", "suspend", "activate", "fail")


@dataclass(frozen=True)
class Fault:
    """A fault at ``at``: ``crash`` a node (restarting it ``length`` later if given),
    ``pause`` it for ``length``, ``slow_db`` by ``factor`` for ``length``, cut a node off
    (``partition``) for ``length``, its statements failing after ``timeout``, or step or
    drift a node's ``clock``."""

    at: float
    kind: str
    node: str | None = None  # for an operation: a job name, or "all"
    length: float | None = None
    factor: float = 1.0
    timeout: float = 0.0
    #: the operations ``move`` (a dead letter back to executable) and ``fail``: the retries
    #: it gets (``fail``: as sent; none: 0)
    retries: int | None = None
    #: the operation ``fail``: the error message it sends
    error: str | None = None
    #: ``clock``: the node's clock jumps by ``step`` and, if given, runs at ``drift`` from
    #: then on
    step: float = 0.0
    drift: float | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    seed: int
    handlers: dict[str, Handler]
    nodes: tuple[NodeConfig, ...]
    description: str = ""
    until: float | None = None
    horizon: float = 30 * 86400.0
    db: DbConfig = DbConfig()
    executor: ExecutorConfig = ExecutorConfig()
    ticks: tuple[Tick, ...] = ()
    jobs: tuple[JobSpec, ...] = ()
    streams: tuple[StreamSpec, ...] = ()
    faults: tuple[Fault, ...] = ()
    recurring: tuple[RecurringSpec, ...] = ()
    expect: tuple[Expectation, ...] = ()
    variant: str | None = None
    compare: tuple[str, ...] = ()
    #: the colours of the report's timeline: by outcome, priority or handler (a report's
    #: setting: the run does not read it)
    timeline_colour: str = "outcome"
    #: the downstream services the handlers call, by name
    services: dict[str, ServiceSpec] = field(default_factory=dict)
    source: str = "<scenario>"
    document: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    #: what changed the file's values for this run, as given: ``--set PATH=VALUE``,
    #: ``--seed N``, ``--no-expect`` (empty: the file as written)
    overrides: tuple[str, ...] = ()
    #: seconds left out of the statistics at the start and at the end of the run (the
    #: summary's window, ``analysis/window.py``); the run itself does not read them
    warmup: float = 0.0
    cooldown: float = 0.0
    #: the wall-clock instant of t = 0, in Unix epoch milliseconds (``clock.epoch``): what
    #: a broker's deadlines count from, as a server gives them
    epoch_ms: int = EPOCH_MS

    @property
    def job_count(self) -> int:
        """The jobs the file creates: its listed jobs, its streams' and its schedules'."""
        return (len(self.jobs) + sum(s.count for s in self.streams)
                + sum(r.count for r in self.recurring))

    @property
    def end(self) -> float:
        """The latest instant the run may reach."""
        return self.until if self.until is not None else self.horizon

    @property
    def boundary_timer_jobs(self) -> bool:
        """Whether the tasks' boundary timers are timer jobs — rows of the timer table that
        the timer loops claim and move and an executor thread runs, the event firing only
        then (Flowable) — rather than fired by the engine itself at their instant (the
        Zeebe-like server, and every executor without a timer table)."""
        return self.executor.timer_table and any(h.boundary for h in self.handlers.values())

    @property
    def clocks_differ(self) -> bool:
        """Whether a node's claims may read a clock that is not the true one (an offset, a
        drift or a clock fault, where the claims use the nodes' clocks)."""
        return self.executor.clock == "node" and (
            any(n.executor.clock_offset or n.executor.clock_drift for n in self.nodes)
            or any(f.kind == "clock" for f in self.faults))

    @property
    def keeps_failed(self) -> bool:
        """Whether a job whose retries run out stays failed until an operator's retry or
        cancel (``exhausted: failed``, failsafe-executor) on the cluster or a node of it: a
        recurring schedule is then one task, its occurrences one at a time
        (``sim/workload.py``)."""
        return self.executor.exhausted == "failed" or any(
            n.executor.exhausted == "failed" for n in self.nodes)

    def retry_for(self, node: str, handler: str) -> RetryPolicy:
        """The retry policy a failure of ``handler`` follows (on any node: retries are the
        job's, set when it was created — the handler's policy, else the executor's)."""
        h = self.handlers[handler]
        return h.retry if h.retry is not None else self.executor.retry

    def initial_retries(self, handler: str) -> int:
        h = self.handlers[handler]
        return (h.retry or self.executor.retry).initial_retries()

