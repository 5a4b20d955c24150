"""A run that is a process: a handler's steps (its own work and its calls to services), or a
Python generator (``executor/context.py``), run inside the worker thread's own generator —
no SimPy process per run.

Each ends the execution as the drawn runs do, with its ``exec_end``, and returns whether it
succeeded and its error. A worker's own timeout (``worker_timeout``) races the whole run: the
step it cuts short ends the run there with "processing took too long" (a call still in flight
stays with the service: it does not know the caller left, and a call that is the run's side
effect takes effect there all the same: ``executor/services.py``). A stalled node's thread goes
on after each step only when the pause ends; if the worker's timeout passed meanwhile, the run
ends there, timed out, before its next step.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from ...base.trace import K, pack
from ...base.errors import ScenarioError
from ...database.db import delay
from ..context import Context, HandlerError, JobFailed, not_an_event
from ..handlers import TIMED_OUT, Call, Handler

if TYPE_CHECKING:
    from .host import Host


def run_process(node: Host, hname: str, jid: int, attempt: int, stream: Any,
                token: int = 0) -> Generator[Any, Any, tuple[bool, str | None]]:
    """The run of a process handler, told by its ``exec_end``; (ok, error). ``token``: the
    run's fencing token (the row's lock generation at its claim), which its calls carry."""
    world, env = node.world, node.env
    h: Handler = world.handlers[hname]
    deadline = env.now + h.worker_timeout if h.worker_timeout is not None else math.inf
    if h.python is not None:
        ok, error, said = yield from _python(node, h, jid, attempt, deadline, token)
    else:
        ok, error, said = yield from _steps(node, h, jid, attempt, stream, deadline, token)
    trace = node.trace
    # no step carried the side effect: it is at the end (or at the commit: the worker's)
    at_end = ok and not said and not h.at_commit
    text = world.says[hname] if at_end else (-1 if ok else trace.text(error or ""))
    trace.put(pack(env.now, K["exec_end"], node.code, jid, attempt, int(ok), int(at_end), 0,
                math.nan, text))
    return ok, error


def _steps(node: Host, h: Handler, jid: int, attempt: int, stream: Any,
           deadline: float, token: int) -> Generator[Any, Any, tuple[bool, str | None, bool]]:
    env, services = node.env, node.world.services
    steps = h.steps or ()
    effect = h.effect_step
    said = False
    for i, step in enumerate(steps):
        left = deadline - env.now
        if left < 0:
            # the worker's timeout passed while the node was paused: its timer fires the
            # moment the node runs again, before the next step starts
            return False, TIMED_OUT, said
        if isinstance(step, Call):
            t, cut = step.timeout, False
            if left < math.inf and (t is None or left < t):
                t, cut = left, True
            breaker = _Breaker.of(node, step) if step.breaker is not None else None
            trial = False
            if breaker is not None:
                admitted = breaker.admit(env.now)
                if admitted is None:
                    return False, f"{step.service} circuit open", said
                trial = admitted
            says = node.world.says[h.name] if i == effect else None
            reply = yield from services[step.service].call(
                node.code, jid, attempt, t, cut, node.life, says,
                idempotency_key(step.idempotency_key, jid, attempt), token)
            if breaker is not None:
                breaker.answered(env.now, reply.ok, trial)
            if node.paused is not None:
                yield node.paused
            if not reply.ok:  # cut by the worker's timeout: "processing took too long"
                return False, reply.error, said
            if i == effect:
                said = True  # a replayed answer: the effect was the first call's
                if reply.outcome != "replayed":
                    node.trace.put(pack(env.now, K["side_effect"], node.code, jid, attempt, 0,
                                     0, 0, math.nan, node.world.says[h.name]))
        else:
            d = step.duration.sample(stream)
            if d > left:
                yield delay(env, left)
                if node.paused is not None:
                    yield node.paused
                return False, TIMED_OUT, said
            if d > 0:
                yield delay(env, d)
                if node.paused is not None:
                    yield node.paused
    return True, None, said


def idempotency_key(kind: str | None, job: int, attempt: int) -> tuple[int, ...] | None:
    """The key a call sends: the job's (the same on every attempt), the attempt's, or none."""
    if kind is None:
        return None
    return (job,) if kind == "job" else (job, attempt)


def _unstarted(ctx: Context, source: str) -> None:
    """A ``ctx.call(...)`` without ``yield from`` makes no call: refuse it."""
    if any(inspect.getgeneratorstate(c) == inspect.GEN_CREATED for c in ctx.calls):
        raise not_an_event(ctx.handler, "reply = yield from ctx.call(...)",
                           "ctx.call(...) without yield from: the call was never made",
                           source)


class _Breaker:
    """A call step's circuit breaker on one node (see ``handlers.Call``)."""

    __slots__ = ("after", "open_for", "failures", "open_until", "trial")

    def __init__(self, after: int, open_for: float):
        self.after, self.open_for = after, open_for
        self.failures, self.open_until, self.trial = 0, -1.0, False

    @staticmethod
    def of(node: Host, step: Call) -> _Breaker:
        """The node's breaker of this service (kept in its memory: lost in a crash)."""
        states = node.memory.setdefault("", {})
        b = states.get(step.service)
        if b is None:
            b = states[step.service] = _Breaker(*step.breaker)  # type: ignore[misc]
        return b

    def admit(self, now: float) -> bool | None:
        """None: refused (open, or half-open with its trial in flight); else whether the
        call is the trial."""
        if self.open_until < 0:
            return False  # closed
        if now < self.open_until or self.trial:
            return None
        self.trial = True
        return True

    def answered(self, now: float, ok: bool, trial: bool) -> None:
        """A call's answer; only the trial's decides a half-open breaker (the answer of a
        call made while it was closed counts as a failure in a row, or closes it)."""
        if trial:
            self.trial = False
        if ok:
            self.failures, self.open_until = 0, -1.0
        elif trial:
            self.open_until = now + self.open_for
        else:
            self.failures += 1
            if self.failures >= self.after and self.open_until < 0:
                self.failures, self.open_until = 0, now + self.open_for


def _python(node: Host, h: Handler, jid: int, attempt: int, deadline: float,
            token: int = 0) -> Generator[Any, Any, tuple[bool, str | None, bool]]:
    """Drive the handler's generator: each event it yields, the worker waits for (raced
    against the worker's timeout); what the event gives (or raises) goes back in."""
    env = node.env
    ctx = Context(node, h.name, jid, attempt, token)
    source = node.world.scenario.source
    gen = h.python(ctx)  # type: ignore[misc]
    if not hasattr(gen, "send"):
        raise not_an_event(h.name, "a generator function (one that yields SimPy events)",
                           f"a function that returned {type(gen).__name__}", source)
    limit = env.timeout(deadline - env.now) if deadline < math.inf else None
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                ev = gen.send(value) if error is None else gen.throw(error)
            except StopIteration:
                _unstarted(ctx, source)
                return True, None, ctx.said
            except JobFailed as failed:
                _unstarted(ctx, source)
                return False, failed.error, ctx.said
            except (ScenarioError, simpy.Interrupt):
                raise
            except Exception as exc:  # a bug in the handler: say where it happened
                raise HandlerError(
                    f"the Python handler {h.name!r} raised {type(exc).__name__}: {exc} (job "
                    f"{jid}, attempt {attempt}, on {node.name} at t={env.now:g}s)") from exc
            if not isinstance(ev, simpy.Event) or ev.env is not env:
                raise not_an_event(h.name, "a SimPy event of this run (ctx.wait(seconds), "
                                           "yield from ctx.call(service), ctx.env.…)",
                                   repr(ev)[:80], source)
            value, error = None, None
            try:
                if limit is not None and not ev.processed:
                    if limit.processed:
                        return False, TIMED_OUT, ctx.said
                    got = yield env.any_of([ev, limit])
                    if ev not in got:
                        return False, TIMED_OUT, ctx.said
                    value = got[ev]
                else:
                    value = yield ev
            except simpy.Interrupt:
                raise  # the node crashed: the run is gone
            except Exception as e:  # the event failed: the handler may catch it
                error = e
            if node.paused is not None:
                yield node.paused
    finally:
        gen.close()
