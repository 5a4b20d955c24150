"""Downstream services: what a handler calls, and what fails when they are in trouble.

A service is declared once per scenario and shared by every node. A call to it goes
through, in this order:

1. **The rate limit** (a token bucket of ``rate`` tokens a second holding at most ``burst``,
   full at the start). A call that finds a token takes it. Otherwise, ``over: refuse`` (a
   gateway's limit) answers at once with the service's 429; ``over: wait`` (a client-side
   limiter) reserves the next token and waits for it, so that waiting calls leave ``1 /
   rate`` apart, in the order they came — unless that token comes after the caller would
   give up: then it takes none and is refused at once (Guava's ``tryAcquire`` with a
   timeout, resilience4j's limiter). Calls the limit turns away never reach the service:
   they are not part of its load.
2. **The health** at that instant. In an outage, ``fail: fast`` answers at once with the
   service's error (a refused connection, a 503); ``fail: timeout`` never answers, so the
   call ends at the caller's timeout, or never. A brown-out multiplies the latency by its
   factor, and answers a share of the calls with the error after their latency. With
   ``recovery: {below, over}``, an outage lasts past its scheduled end for as long as the
   service receives more than ``below`` calls a second, counted over the last ``over``
   seconds: retries that keep coming keep it down. An outage that starts while the service
   is held down takes over (its ``fail``), and the load is counted again at its end.
   Outages that touch, with the same ``fail``, are one.
3. **The capacity**: at most ``capacity`` calls are served at once. A call beyond it waits
   in a FIFO queue (``when_full: queue``) or is refused at once (``when_full: refuse``). A
   queued call is admitted when a call ends, by the health at that instant.
4. **The service**: the latency drawn from the stream ``service/<name>`` (and the brown-out's
   error draw, from the same stream) when the call is admitted.

The caller's timeout counts from the call: a token's wait and the queue's count in it. A
call whose caller gave up still holds its place until the service is done with it (the
service does not know), as real servers do.

No SimPy process runs per call: a call is one event the caller waits for, answered by the
callback of the latency's timeout or of the caller's own timeout. The health schedule is
one process per service. The trace has a ``service_call`` at the call, a
``service_reply`` when the caller has its answer, and a ``service_state`` at each change of
health.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, NamedTuple

import simpy

from ..base.dists import ZERO, Distribution
from ..base.durations import format_duration
from ..base.rng import Stream
from ..base.trace import K, Trace, pack

#: a reply's outcome, as the ``service_reply`` event's ``a`` codes it: ``timeout`` is the
#: call's own, ``worker_timeout`` the worker's timeout on the whole run cutting it short
OUTCOMES = ("ok", "error", "timeout", "refused", "rate_limited", "worker_timeout")
OK, ERROR, TIMEOUT, REFUSED, LIMITED, CUT = range(6)
#: a health state, as the ``service_state`` event's ``a`` codes it
STATES = ("up", "down", "brownout")
UP, DOWN, BROWNOUT = range(3)


@dataclass(frozen=True)
class Outage:
    at: float
    length: float
    #: "fast": calls fail at once; "timeout": calls are never answered
    fail: str = "fast"


@dataclass(frozen=True)
class Brownout:
    at: float
    length: float
    latency_factor: float = 1.0
    error_share: float = 0.0


@dataclass(frozen=True)
class ServiceSpec:
    """A downstream service as the scenario declares it (see the module's docstring)."""

    name: str
    latency: Distribution = ZERO
    #: concurrent calls (None: no limit)
    capacity: int | None = None
    when_full: str = "queue"
    #: (rate a second, burst, "refuse" | "wait") or None
    rate_limit: tuple[float, float, str] | None = None
    outages: tuple[Outage, ...] = ()
    brownouts: tuple[Brownout, ...] = ()
    #: (calls a second, over seconds): an outage lasts while the load is above it
    recovery: tuple[float, float] | None = None
    error: str = ""

    @property
    def error_text(self) -> str:
        return self.error or f"{self.name} 503 service unavailable"

    def texts(self, timeout: float | None = None) -> tuple[str, ...]:
        """The error of each outcome (``OUTCOMES``); ``ok`` has none."""
        after = f" after {format_duration(timeout)}" if timeout is not None else ""
        return ("", self.error_text, f"{self.name} timed out{after}",
                f"{self.name} busy: at capacity", f"{self.name} 429 too many requests",
                "processing took too long")

    def windows(self) -> list[tuple[float, float, int, Outage | Brownout]]:
        """The health windows in time order: (start, end, state, window)."""
        outages: list[Outage] = []
        for o in sorted(self.outages, key=lambda o: o.at):  # touching ones are one outage
            last = outages[-1] if outages else None
            if last is not None and last.at + last.length == o.at and last.fail == o.fail:
                outages[-1] = Outage(last.at, last.length + o.length, o.fail)
            else:
                outages.append(o)
        out: list[tuple[float, float, int, Outage | Brownout]] = [
            (o.at, o.at + o.length, DOWN, o) for o in outages]
        out += [(b.at, b.at + b.length, BROWNOUT, b) for b in self.brownouts]
        return sorted(out, key=lambda w: (w[0], -w[2]))


class Reply(NamedTuple):
    """A call's answer: ``ok``, the outcome's name (``OUTCOMES``), the error (None when
    ok), the time waited for a token or a place, and the time from the call to the answer."""

    ok: bool
    outcome: str
    error: str | None
    waited: float
    took: float


class _Call:
    __slots__ = ("ev", "t0", "node", "job", "attempt", "number", "admitted", "texts",
                 "deadline", "waits", "counted")

    def __init__(self, ev: simpy.Event, t0: float, node: int, job: int, attempt: int,
                 number: int, texts: tuple[int, ...]):
        self.ev, self.t0, self.node, self.job, self.attempt = ev, t0, node, job, attempt
        self.number, self.texts = number, texts
        self.admitted = -1.0
        #: when its caller gives up (inf: never); whether it waited for a token or a place
        self.deadline, self.waits, self.counted = math.inf, False, False


class Service:
    """A service in a run: its state, its queue, its bucket."""

    def __init__(self, spec: ServiceSpec, env: simpy.Environment, trace: Trace,
                 stream: Stream):
        self.spec, self.env, self.trace, self.stream = spec, env, trace, stream
        self.name_code = trace.text(spec.name)
        self.state, self.factor, self.share, self.times_out = UP, 1.0, 0.0, False
        self.busy = 0
        self.queue: deque[_Call] = deque()
        self.calls = 0
        if spec.rate_limit is not None:
            self.rate, self.burst, self.over = spec.rate_limit
            self.tokens, self.filled = self.burst, 0.0
        else:
            self.rate = 0.0
        #: arrivals within the recovery's window (only with ``recovery``)
        self.arrivals: deque[float] = deque()
        self._texts: dict[float | None, tuple[int, ...]] = {}
        if spec.outages or spec.brownouts:
            env.process(self._health())

    # --- the caller's side -----------------------------------------------------------------

    def call(self, node: int, job: int, attempt: int, timeout: float | None = None,
             cut: bool = False) -> Generator[Any, Any, Reply]:
        """Call the service (from a worker's generator: ``yield from``); its ``Reply``.
        ``cut``: the timeout is the worker's on the whole run, not the call's own."""
        env = self.env
        now = env.now
        number = self.calls
        self.calls += 1
        texts = self._texts.get(timeout)
        if texts is None:
            texts = self._texts[timeout] = tuple(
                self.trace.text(t) if t else -1 for t in self.spec.texts(timeout))
        self.trace.put(pack(now, K["service_call"], node, job, attempt, 0, number, 0, now,
                         self.name_code))
        c = _Call(env.event(), now, node, job, attempt, number, texts)
        if timeout is not None:
            c.deadline = now + timeout
            code = CUT if cut else TIMEOUT
            env.timeout(timeout).callbacks.append(lambda _e: self._answer(c, code))
        if self.rate:
            self._limit(c, now)
        else:
            self._admit(c)
        code = yield c.ev
        t = env.now
        error = None if code == OK else self.trace.texts[texts[code]]
        return Reply(code == OK, OUTCOMES[code], error, self._waited(c, t), t - c.t0)

    @staticmethod
    def _waited(c: _Call, now: float) -> float:
        """Its wait for a token or a place (to its admission, or to its answer while it was
        still waiting); none for a call an outage answered or dropped at once."""
        if c.admitted >= 0:
            return c.admitted - c.t0
        return now - c.t0 if c.waits else 0.0

    def _answer(self, c: _Call, code: int) -> None:
        if c.ev.triggered:
            return
        now = self.env.now
        waited = self._waited(c, now)
        self.trace.put(pack(now, K["service_reply"], c.node, c.job, c.attempt, code, c.number,
                         round(waited * 1e6), now - c.t0, self.name_code))
        c.ev.succeed(code)

    # --- the service's side ----------------------------------------------------------------

    def _limit(self, c: _Call, now: float) -> None:
        tokens = min(self.burst, self.tokens + (now - self.filled) * self.rate)
        self.filled = now
        if tokens >= 1.0:
            self.tokens = tokens - 1.0
            self._admit(c)
        elif self.over == "refuse":
            self.tokens = tokens
            self._answer(c, LIMITED)
        else:  # reserve the next token and wait for it, unless it comes after the caller
            wait = (1.0 - tokens) / self.rate  # gives up: then no token is taken, and the
            if now + wait > c.deadline:       # call is refused at once (Guava's
                self.tokens = tokens          # tryAcquire with a timeout, resilience4j)
                self._answer(c, LIMITED)
                return
            self.tokens = tokens - 1.0
            c.waits = True
            self.env.timeout(wait).callbacks.append(lambda _e: self._admit(c))

    def _admit(self, c: _Call) -> None:
        if c.ev.triggered:  # its caller gave up while it waited for a token
            return
        if self.spec.recovery is not None and not c.counted:
            c.counted = True  # the load the service itself receives: past its limiter
            self._arrive(self.env.now)
        if self.state == DOWN:
            if not self.times_out:
                self._answer(c, ERROR)
            return  # never answered: the caller's timeout ends it
        cap = self.spec.capacity
        if cap is not None and self.busy >= cap:
            if self.spec.when_full == "refuse":
                self._answer(c, REFUSED)
            else:
                c.waits = True
                self.queue.append(c)
            return
        self._serve(c)

    def _serve(self, c: _Call) -> None:
        self.busy += 1
        c.admitted = self.env.now
        latency = self.spec.latency.sample(self.stream) * self.factor
        code = ERROR if self.share and self.stream.uniform() < self.share else OK
        self.env.timeout(latency).callbacks.append(lambda _e: self._done(c, code))

    def _done(self, c: _Call, code: int) -> None:
        self.busy -= 1
        self._answer(c, code)
        self._drain()

    def _drain(self) -> None:
        """Admit queued calls while there is room (those whose caller left are skipped)."""
        queue, cap = self.queue, self.spec.capacity
        while queue and (cap is None or self.busy < cap):
            nxt = queue.popleft()
            if not nxt.ev.triggered:
                self._admit(nxt)

    # --- health ----------------------------------------------------------------------------

    def _arrive(self, now: float) -> None:
        self.arrivals.append(now)
        self._forget(now)

    def _forget(self, now: float) -> None:
        """Drop the arrivals that have left the recovery's window at ``now`` (the same
        float sum as the instant ``_recover`` wakes at, so that they have then)."""
        arrivals, window = self.arrivals, self.spec.recovery[1]  # type: ignore[index]
        while arrivals and arrivals[0] + window <= now:
            arrivals.popleft()

    def _set(self, state: int, held: int = 0, factor: float = 1.0, share: float = 0.0,
             times_out: bool = False) -> None:
        self.state, self.factor, self.share, self.times_out = state, factor, share, times_out
        c = int(times_out) if state == DOWN else round(share * 1e6)
        self.trace.put(pack(self.env.now, K["service_state"], -1, -1, 0, state, held, c, factor,
                         self.name_code))
        if state != DOWN:  # queued calls go on as the state allows
            self._drain()

    def _health(self) -> Generator[Any, Any, None]:
        env = self.env
        windows = self.spec.windows()
        for i, (start, end, state, w) in enumerate(windows):
            if env.now < start:
                yield env.timeout(start - env.now)
            elif env.now >= end:
                continue  # an outage held down by load outlasted this window
            if state == DOWN:
                assert isinstance(w, Outage)
                self._set(DOWN, times_out=w.fail == "timeout")
                yield env.timeout(end - env.now)
                nxt = next((s for s, _e, st, _w in windows[i + 1:] if st == DOWN), math.inf)
                if (yield from self._recover(w, nxt)):
                    continue  # still down when the next outage starts: it takes over
            else:
                assert isinstance(w, Brownout)
                self._set(BROWNOUT, factor=w.latency_factor, share=w.error_share)
                yield env.timeout(end - env.now)
            self._set(UP)

    def _recover(self, w: Outage, nxt: float) -> Generator[Any, Any, bool]:
        """Past an outage's end: stay down while the load is above the recovery's rate,
        or until the next outage starts at ``nxt`` (then True)."""
        rec = self.spec.recovery
        if rec is None:
            return False
        below, window = rec
        allowed = int(below * window)  # calls the window may hold
        held = False
        wake = self.env.now
        while True:
            # ``wake``: a float sum that ``env.now`` may miss by a rounding
            now = max(self.env.now, wake)
            self._forget(now)
            arrivals = self.arrivals
            if len(arrivals) <= allowed:
                return False
            if now >= nxt:
                return True
            if not held:
                held = True
                self._set(DOWN, held=1, times_out=w.fail == "timeout")
            # with no new call, the load is low enough once the (allowed+1)-th latest
            # call has left the window; new calls move it later, and are seen then
            wake = min(arrivals[-(allowed + 1)] + window, nxt)
            yield self.env.timeout(max(0.0, wake - self.env.now))
