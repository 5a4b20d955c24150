"""What a handler written in Python sees: its ``Context``.

Through the API, a handler may be a generator function of one argument, the context, that
yields SimPy events — for what a scenario file cannot say: a circuit breaker in the worker, a
wait before failing that depends on the error, a call made only on some attempts::

    def charge(ctx):
        if ctx.memory.get("open_until", -1) > ctx.now:
            raise JobFailed("circuit open")          # fails the execution
        reply = yield from ctx.call("payments", timeout=2.0)
        if not reply.ok:
            raise JobFailed(reply.error)
        yield ctx.wait(0.05)                          # its own work

    scenario = jobsim.with_handler(scenario, "charge", charge)

A run that returns has succeeded (its side effect at the end, unless it called
``ctx.side_effect()`` earlier); ``raise JobFailed(error)`` fails it with that error, and the
retry policy goes on from there. The worker's own timeout, wait before failing and retries
apply as to any handler.

Determinism holds when the handler draws its randomness from ``ctx.random`` (the stream
``handler/<name>``) or ``ctx.stream(name)``, and keeps what it remembers between runs in
``ctx.memory`` — one dictionary per node and handler, lost when the node crashes, as a
process's memory is — never in a global.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import simpy

from ..base.errors import JobsimError, Problem, ScenarioError
from ..base.rng import Stream
from ..base.trace import K, pack
from .service_spec import Reply

if TYPE_CHECKING:
    from .parts.host import Host


class JobFailed(Exception):
    """Raised by a Python handler: the execution fails with ``error``."""

    def __init__(self, error: str = "handler failed"):
        super().__init__(error)
        self.error = str(error)


class HandlerError(JobsimError):
    """A Python handler raised an exception of its own (not ``JobFailed``): a bug in it."""


def not_an_event(handler: str, expected: str, got: str,
                 source: str | None = None) -> ScenarioError:
    return ScenarioError([Problem(f"handlers.{handler}", expected, got,
                                  "a Python handler yields the events it waits for")], source)


def _seconds(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value)


class Context:
    """One execution of a Python handler: the job, its attempt, the node, the services."""

    __slots__ = ("_node", "handler", "job", "attempt", "said", "calls", "token")

    def __init__(self, node: Host, handler: str, job: int, attempt: int, token: int = 0):
        self._node, self.handler, self.job, self.attempt = node, handler, job, attempt
        #: the run's fencing token (the row's lock generation at its claim); every call
        #: carries it, and a service with ``fencing`` refuses one older than it has seen
        self.token = token
        self.said = False
        #: the calls it made: one never started was not ``yield from``-ed
        self.calls: list[Generator[Any, Any, Reply]] = []

    def _problem(self, expected: str, got: str) -> ScenarioError:
        return ScenarioError([Problem(f"handlers.{self.handler}", expected, got)],
                             self._node.world.scenario.source)

    @property
    def node(self) -> str:
        """The name of the node that runs it."""
        return self._node.name

    @property
    def env(self) -> simpy.Environment:
        """The run's SimPy environment (for events beyond ``wait`` and ``call``)."""
        return self._node.env

    @property
    def now(self) -> float:
        """The simulated time, in seconds."""
        return self._node.env.now

    @property
    def random(self) -> Stream:
        """The handler's named stream (``handler/<name>``): ``uniform()``, ``exponential()``,
        ``normal()``."""
        return self._node.world.handler_stream(self.handler)

    def stream(self, name: str) -> Stream:
        """Another named stream of the handler's: ``handler/<handler>/<name>``."""
        return self._node.world.named_stream(f"handler/{self.handler}/{name}")

    @property
    def memory(self) -> dict[str, Any]:
        """What this handler remembers on this node between runs; empty after a crash."""
        return self._node.memory.setdefault(self.handler, {})

    @property
    def services(self) -> tuple[str, ...]:
        """The names of the scenario's services."""
        return tuple(self._node.world.services)

    def wait(self, seconds: float) -> simpy.Timeout:
        """An event ``seconds`` from now (yield it)."""
        if not _seconds(seconds) or seconds < 0:
            raise self._problem("ctx.wait(seconds) with a finite number of seconds, at least 0",
                                repr(seconds))
        return self._node.env.timeout(seconds)

    def call(self, service: str, timeout: float | None = None, effect: bool = False,
             idempotency_key: str | None = None) -> Generator[Any, Any, Reply]:
        """Call a service (``reply = yield from ctx.call(...)``): its ``Reply`` (``ok``,
        ``outcome``, ``error``, ``waited``, ``took``, ``ambiguous``).

        ``effect``: the call is the run's side effect — its ``ok`` answer is the effect
        (``side_effect()`` at that instant), and if the caller times out while the service
        has the call, the service makes the effect all the same (``reply.ambiguous``: a
        timeout that may have charged). ``idempotency_key``: ``"job"`` (the same on every
        attempt) or ``"attempt"``; a ``replayed`` answer is ok, with no second effect."""
        node = self._node
        services = node.world.services
        if service not in services:
            known = ", ".join(services) or "none: the scenario declares no services"
            raise self._problem(f"a call to a declared service ({known})", repr(service))
        if timeout is not None and (not _seconds(timeout) or timeout <= 0):
            raise self._problem("a call's timeout of a finite number of seconds above 0, or "
                                "None", repr(timeout))
        if not isinstance(effect, bool):
            raise self._problem("effect=True or False", repr(effect))
        if idempotency_key not in (None, "job", "attempt"):
            raise self._problem('idempotency_key="job", "attempt" or None',
                                repr(idempotency_key))
        key = None if idempotency_key is None else (
            (self.job,) if idempotency_key == "job" else (self.job, self.attempt))
        says = node.world.says[self.handler] if effect and not self.said else None
        call = self._call(services[service].call(node.code, self.job, self.attempt, timeout,
                                                 life=node.life, effect=says, key=key,
                                                 token=self.token),
                          says is not None)
        self.calls.append(call)
        return call

    def _call(self, call: Generator[Any, Any, Reply],
              effect: bool) -> Generator[Any, Any, Reply]:
        """The call, and its answer's side effect when it is the run's."""
        reply = yield from call
        if effect and reply.ok and not self.said:
            if reply.outcome == "replayed":
                self.said = True  # the first call's effect: none now
            else:
                self.side_effect()
        return reply

    def side_effect(self) -> None:
        """The run's side effect happens now (once: later calls do nothing)."""
        if self.said:
            return
        self.said = True
        node = self._node
        node.trace.put(pack(node.env.now, K["side_effect"], node.code, self.job, self.attempt,
                         0, 0, 0, float("nan"), node.world.says[self.handler]))
