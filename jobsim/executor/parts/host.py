"""What a part may use of its node (``Host``) and of the run (``Cluster``): the executor's
interface, written down in one place.

A part (a module of this package) is handed the node it runs on and reaches the run through
``node.world``; it uses only the names listed here. ``executor/node.py``'s ``Node`` is a
``Host`` and ``sim/world.py``'s ``World`` a ``Cluster`` (structurally: neither names these
classes), so the parts import neither the node nor the world, and the node imports no part
of the simulation around it. A new part that needs more of its node adds the name here,
with what it is for; the hot paths bind what they need once (``worker.py``).

Both are ``typing.Protocol``\\ s: they cost nothing at run time and are read by type checkers
and people.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import simpy

    from ...base.rng import Stream, Streams
    from ...base.trace import Trace
    from ...database.claims import Attempt
    from ...database.db import Database
    from ...database.store import Row, Store
    from ..config import ExecutorConfig, Scenario
    from ..handlers import Handler
    from ..services import Service


class Cluster(Protocol):
    """The run as the executor sees it: the clock, the database, the trace, the scenario,
    the handlers and services, and the few counters and notices the nodes keep up."""

    env: simpy.Environment
    scenario: Scenario
    db: Database
    store: Store
    trace: Trace
    streams: Streams
    #: handler name -> its ``Handler`` (boundary timers' handlers included)
    handlers: dict[str, Handler]
    #: service name -> the service its calls go to
    services: dict[str, Service]
    #: the handlers whose runs are processes (they call services, or are Python)
    process_handlers: frozenset[str]
    #: the boundary timers of a scenario with a timer table (``boundary.BoundaryTimers``)
    boundary: Any
    #: the instant and salt of the poll running now (``polls.rank``)
    rank_now: tuple[float, int]
    #: job id -> executions started (an execution's attempt number)
    executions: dict[int, int]
    #: per handler: its name's text, what its side effect says, its initial retries, and
    #: its stream (made at first use: ``handler_stream``)
    handler_texts: dict[str, int]
    says: dict[str, int]
    retries: dict[str, int]
    handler_streams: dict[str, Stream]
    #: job id -> the event a recurring schedule waits on for its end
    waiters: dict[int, simpy.Event]
    #: the next job id a row created in the run takes
    next_id: int
    #: jobs created; jobs not yet ended; executions running and started; claims that lost
    #: a race
    created: int
    live: int
    in_flight: int
    started: int
    lost_races: int
    #: whether idle nodes may count empty polls; whether faults are scheduled; whether the
    #: nodes' clocks disagree
    idle_shortcut: bool
    has_faults: bool
    skewed: bool

    def handler_stream(self, name: str) -> Stream: ...

    def named_stream(self, name: str) -> Stream: ...

    def jitter_stream(self, node: str) -> Stream: ...

    def finished(self, jid: int) -> None:
        """A job reached a terminal state (wakes what waits for it)."""

    def job_done(self) -> None:
        """A job left the table without a completion (dead-lettered, ended with its task)."""

    def check_drained(self) -> None:
        """Nothing may happen any more: end a drained run."""


class Host(Protocol):
    """A node as its parts see it: who it is, its settings and its run; the local queue and
    its idle threads; its pause, crash and tick state; the claim strategy and the hand-off
    of what a claim locked; and the few statements every part traces the same way."""

    env: simpy.Environment
    world: Cluster
    db: Database
    trace: Trace
    name: str
    #: the node's code in the trace
    code: int
    cfg: ExecutorConfig
    #: when the node starts (None: at 0, its first poll at a drawn phase)
    start_at: float | None
    #: whether the scenario has a timer table (a second acquisition loop)
    timer_table: bool
    # --- the local queue and its threads ---
    queue: deque[tuple[int, str, str, int]]
    idle: deque[Any]
    #: the event a full local queue waits on until a thread frees a slot
    slot: simpy.Event | None
    #: job id -> executions of it running here (kept when ``track_running``)
    running: dict[int, int]
    track_running: bool
    #: what Python handlers remember here, by handler; this incarnation's ``[alive]``
    memory: dict[str, dict]
    life: list[bool]
    # --- pause and fake clock ---
    #: the event a paused node's parts wait on (None: running)
    paused: simpy.Event | None
    #: per acquisition loop: the event its next tick fires; the timer round while it runs
    tick_events: dict[str, simpy.Event]
    timer_round: simpy.Event | None
    # --- claims ---
    #: the claim statement (a generator) and its one-instant form, if the database allows
    acquire: Callable[..., Generator[Any, Any, Attempt]]
    instant: Callable[..., list] | None
    #: whether an empty poll takes no time and touches nothing; whether the idle sleep counts
    instant_polls: bool
    exact_idle: bool
    strategy_text: int
    timer_text: int
    #: the hand-off of the rows a claim locked (the database's listener for this node)
    on_locked: Callable[[list], None]
    #: timers its timer loop locked, to move; rows a full queue refused, to unacquire
    timers_locked: list[int]
    rejects: list[int]
    reject_wake: simpy.Event | None
    rejected: int
    #: per acquisition loop: its idle sleep (``polls.Sleep``), if asleep
    sleeps: dict[str, Any]
    polls: int
    polls_skipped: int

    def free(self) -> int:
        """Rows the next claim may ask for."""

    def slot_freed(self) -> simpy.Event:
        """The event fired when a thread frees a slot of the local queue."""

    def first_poll(self) -> float:
        """Seconds from the loop's start to its first poll."""

    def grid(self, table: str) -> Any:
        """The poll grid (``polls.Grid``) of this node's loop over ``table``."""

    def hint(self, row: Row) -> None:
        """A job this node's transaction created, locked by it: straight to the local pool."""

    def trace_attempt(self, att: Attempt, text: int | None = None) -> None:
        """Trace a claim statement as a whole."""

    def failed(self, statement: str, job: int = -1, attempt: int = 0) -> None:
        """Trace a statement that never reached the database."""
