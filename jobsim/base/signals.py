"""Stopping cleanly on a signal: Ctrl-C, ``kill`` and a closed terminal alike.

Python turns SIGINT into ``KeyboardInterrupt``, so ``finally`` blocks and ``except
BaseException`` clean-ups run and nothing half-written is left; SIGTERM and SIGHUP, by
default, end the process at once and leave whatever it was writing (a report's temporary
folder beside its target, for ever). ``stopping_cleanly()`` makes all three raise
``Stopped`` — a ``KeyboardInterrupt``, so every clean-up written for Ctrl-C runs — in the
main thread, once: a second signal while the first one's clean-up runs is ignored. A
``Stopped`` raised where Python cannot raise it on (a finalizer) is raised again, by the end
of ``stopping_cleanly`` at the latest.

``held()`` marks a step that must be whole (the swap of a report's files for the new ones,
a manifest written beside its files): a signal arriving inside it is acted on at its end.

The command line's exit status for a stop is 128 + the signal's number (130 for Ctrl-C, 143
for SIGTERM, 129 for SIGHUP), as a shell reports a process that a signal ended.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: the signals that stop a command cleanly
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                if hasattr(signal, name))


class Stopped(KeyboardInterrupt):
    """The process was asked to stop by a signal (``signum``); a ``KeyboardInterrupt`` so
    that every clean-up written for Ctrl-C runs for it too."""

    def __init__(self, signum: int = signal.SIGINT, note: str = ""):
        super().__init__(signum, note)
        self.signum, self.note = int(signum), note

    def __str__(self) -> str:
        return self.note  # as a KeyboardInterrupt's: what the clean-up could not do, if any


def signum_of(exc: BaseException) -> int:
    """The signal behind a stop: a plain ``KeyboardInterrupt`` is Ctrl-C's."""
    return exc.signum if isinstance(exc, Stopped) else int(signal.SIGINT)


def name_of(exc: BaseException) -> str:
    """``SIGTERM``, ``SIGHUP`` or ``SIGINT`` (Ctrl-C)."""
    signum = signum_of(exc)
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    return f"{name} (Ctrl-C)" if signum == signal.SIGINT else name


def status_of(exc: BaseException) -> int:
    """The exit status of a process stopped by ``exc``: 128 + the signal's number."""
    return 128 + signum_of(exc)


class _State:
    pid: int | None = None  # the process that installed the handlers (a fork has another)
    held = 0  # depth of ``held()`` sections
    pending: int | None = None  # a signal that came inside one
    stopping = False  # a Stopped was raised: further signals are ignored
    hook: Any = None  # ``sys.unraisablehook`` before the outermost ``stopping_cleanly``
    again: int | None = None  # a stop a finalizer swallowed, to raise again (``_unraisable``)
    in_hook = False  # ``_unraisable`` runs: a signal now is left to the resending thread


def _raise(signum: int) -> None:
    _State.stopping = True
    raise Stopped(signum)


def _unraisable(what: object) -> None:
    """``sys.unraisablehook`` while stopping cleanly: a ``Stopped`` that a signal raised
    where Python cannot raise it on (a finalizer, a weak reference's callback: Python prints
    it and goes on) stopped nothing. Once swallowed, the run went on to its end with exit 0,
    and ignored every later Ctrl-C or SIGTERM. The signal is taken again, and a thread sends
    it again every 10 ms until the main thread raises it outside a finalizer (not from
    here: a handler run within this hook would raise into it, and be lost in turn); at the
    end of ``stopping_cleanly`` at the latest."""
    exc = getattr(what, "exc_value", None)
    if not (isinstance(exc, Stopped) and os.getpid() == _State.pid):
        (_State.hook or sys.__unraisablehook__)(what)
        return
    _State.in_hook = True
    try:
        resending = _State.again is not None
        _State.again, _State.stopping = exc.signum, False
        if not resending:
            threading.Thread(target=_resend, args=(os.getpid(),), daemon=True,
                             name="jobsim-stop").start()
    finally:
        _State.in_hook = False


def _resend(pid: int) -> None:
    """Send the swallowed stop to this process every 10 ms, until it is raised."""
    while True:
        time.sleep(0.01)
        signum = _State.again
        if signum is None or _State.pid != pid:
            return
        os.kill(pid, signum)


def _forked() -> None:
    """In a child, at the fork itself: this process's handlers become the defaults. A
    Python handler runs only when the child's main thread next runs bytecode, and a child
    forked from a process with threads can be stuck in C for good (a lock another thread
    held at the fork): its pool's SIGTERM must end it all the same, or the parent waits on
    it for ever (CI met a calibration's pool that never ended)."""
    for s in SIGNALS:
        if signal.getsignal(s) is _handler:
            signal.signal(s, signal.SIG_DFL)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def _handler(signum: int, frame: object) -> None:
    if os.getpid() != _State.pid:
        # a process forked with this handler whose fork hook could not run (no
        # ``register_at_fork``): it ends as it would have without it
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if _State.in_hook:
        return  # a stop is being raised again (``_unraisable``): its thread sends it anew
    if _State.again is not None:  # a stop a finalizer swallowed: raised now, whichever came
        signum, _State.again = _State.again, None
    if _State.stopping:
        return  # once: let the clean-up finish
    if _State.held:
        _State.pending = _State.pending or signum
        return
    _raise(signum)


@contextmanager
def stopping_cleanly() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise ``Stopped`` while inside; the handlers before are
    put back at the end. Outside the main thread (where Python cannot take signals) it does
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in SIGNALS}
    saved = (_State.pid, _State.held, _State.pending, _State.stopping, _State.again)
    _State.pid, _State.held, _State.pending, _State.stopping = os.getpid(), 0, None, False
    _State.again = None
    hook = sys.unraisablehook
    if hook is not _unraisable:  # the outermost: nested, the hook is already ours
        _State.hook, sys.unraisablehook = hook, _unraisable
    for s in SIGNALS:
        if old[s] is not signal.SIG_IGN:  # ignored by the caller (nohup): stays ignored
            signal.signal(s, _handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        again = _State.again  # a stop a finalizer swallowed that the end overtook
        if hook is not _unraisable:
            sys.unraisablehook, _State.hook = hook, None
        _State.pid, _State.held, _State.pending, _State.stopping, _State.again = saved
    if again is not None:  # the block ended well but was asked to stop: it stops here
        raise Stopped(again)


@contextmanager
def held() -> Iterator[None]:
    """A step that must be done whole: a signal that comes during it stops the process at
    its end (if it ended with an error, that error is the stop's cause)."""
    _State.held += 1
    try:
        yield
    except BaseException as exc:
        _State.held -= 1
        if not _State.held and _State.pending is not None and not _State.stopping:
            signum, _State.pending = _State.pending, None
            _State.stopping = True
            raise Stopped(signum) from exc
        raise
    _State.held -= 1
    if not _State.held and _State.pending is not None and not _State.stopping:
        signum, _State.pending = _State.pending, None
        _raise(signum)


def worker_defaults() -> None:
    """In a worker process (forked from the command): Ctrl-C and a hang-up are the parent's
    to handle — it stops its workers — and SIGTERM ends the worker at once."""
    for name, action in (("SIGINT", signal.SIG_IGN), ("SIGHUP", signal.SIG_IGN),
                         ("SIGTERM", signal.SIG_DFL)):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), action)
