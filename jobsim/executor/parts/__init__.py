"""The parts of a node, one concept each, and which of them a node runs.

A part is a module here. Those that run as SimPy processes are listed in ``PARTS`` with the
setting that asks for them, in the order a node starts them (the order is part of the
trace: SimPy runs processes that wake at one instant in the order they were made):

============================  ==============================  ==========================
part                          runs when                       module
============================  ==============================  ==========================
acquisition loop (jobs)       always                          ``acquisition.py``
acquisition loop (timers)     the scenario has a timer table  ``acquisition.py``
worker threads                ``threads`` of them             ``worker.py``
heartbeat                     ``heartbeat`` is set            ``heartbeat.py``
reset thread                  ``reset_interval`` is set       ``reset.py``
unacquirer                    ``on_queue_full: unacquire``    ``unacquire.py``
stager                        ``stager_interval`` is set      ``stager.py``
============================  ==============================  ==========================

The others are steps those processes take: the global acquire lock (``global_lock.py``, with
``global_lock``), the timer mover (``timers.py``), the failure statement and its retry policy
(``failure.py``), serial queues (``serial.py``), and boundary timers as timer jobs
(``boundary.py``, with a timer table: the completion of a worker thread fires them, or deletes
one with its task); the idle sleep is written out in the acquisition loop. A policy
preset is a set of settings (``jobsim/executor/policies.py``): its settings choose the parts.
A new behaviour is a new part (or a change to one) and a row here or a setting, not an edit
of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ...database.store import JOB, TIMER
from .acquisition import loop
from .heartbeat import heartbeat
from .reset import reset_expired
from .stager import stager
from .unacquire import unacquirer
from .worker import worker

if TYPE_CHECKING:
    from .host import Host

Body = Generator[Any, Any, None]

#: (part, whether a node runs it, its process bodies) in the order a node starts them
PARTS: tuple[tuple[str, Callable[["Host"], bool], Callable[["Host"], Iterable[Body]]], ...] = (
    ("acquisition loop (jobs)", lambda node: True, lambda node: [loop(node, JOB)]),
    ("acquisition loop (timers)", lambda node: node.timer_table,
     lambda node: [loop(node, TIMER)]),
    ("worker threads", lambda node: True,
     lambda node: (worker(node, i) for i in range(node.cfg.threads))),
    ("heartbeat", lambda node: bool(node.cfg.heartbeat), lambda node: [heartbeat(node)]),
    ("reset thread", lambda node: bool(node.cfg.reset_interval),
     lambda node: [reset_expired(node)]),
    ("unacquirer", lambda node: node.cfg.on_queue_full == "unacquire",
     lambda node: [unacquirer(node)]),
    ("stager", lambda node: bool(node.cfg.stager_interval), lambda node: [stager(node)]),
)


def processes(node: Host) -> Iterator[Body]:
    """The process bodies of ``node``'s parts, in order."""
    for _, runs, bodies in PARTS:
        if runs(node):
            yield from bodies(node)


def parts_of(node: Host) -> list[str]:
    """The names of the parts ``node`` runs (for the docs and the tests)."""
    return [name for name, runs, _ in PARTS if runs(node)]
