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

The caller's timeout counts from the call: a token's wait and the queue's count in it.

**A timeout is an ambiguous outcome.** The service does not know that a caller gave up (its
timeout, the worker's, or its node's crash): a call it admitted goes on to its end, and so,
by default (``abandoned: finish``), does one waiting in its capacity queue, as most servers
do with a request already read. Its end is recorded at the service (``service_late``) and,
for the call that is its run's side effect, so is the effect (a ``side_effect`` with a=1, or
2 after a crash): the payment is made though the caller saw a timeout, and the retry makes
it again. ``abandoned: drop_queued`` drops a call whose caller left while it still waited
in the queue (a server that checks the connection before it starts a request). A call an
outage never answers (``fail: timeout``), or one the rate limiter held (a client-side wait),
never reached the service: it has no effect.

**Idempotency keys.** A call step may carry a key (``idempotency_key: job``: the same on
every attempt of the job; ``attempt``: a new one each attempt, which protects nothing
across retries). The service remembers a key whose call succeeded for
``idempotency_window`` after that call's end and answers a repeat with that answer
(outcome ``replayed``: ok, no second effect); a repeat that comes while the first is still
in progress is answered with a conflict (409), as Stripe's API does. A repeat is a request
like any other — it takes a place and its latency, drawn as any call's — so that a key
changes what calls answer, never when. A call that ended in an error leaves nothing to
remember: its retry does the work.

No SimPy process runs per call: a call is one event the caller waits for, answered by the
callback of the latency's timeout or of the caller's own timeout. The health schedule is
one process per service. The trace has a ``service_call`` at the call, a
``service_reply`` when the caller has its answer, a ``service_late`` when the service ends a
call whose caller had left, and a ``service_state`` at each change of health.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Generator
from typing import Any

import simpy

from ..base.rng import Stream
from ..base.trace import K, Trace, pack
from ..database.db import delay
from .service_spec import (ABANDONED, BROWNOUT, CONFLICT, CUT, DOWN, ERROR,  # noqa: F401
                           FENCED, LEFT_CRASH, LEFT_TIMEOUT, LIMITED, OK, OUTCOMES, REFUSED,
                           REPLAYED, STATES, TIMEOUT, UP, Brownout, Outage, Reply, ServiceSpec)

#: the incarnation of a caller that never crashes (the default ``life``)
_ALIVE = [True]


class _Call:
    __slots__ = ("ev", "t0", "node", "job", "attempt", "number", "admitted",
                 "deadline", "waits", "counted", "life", "effect", "key", "queued", "token")

    def __init__(self, ev: simpy.Event, t0: float, node: int, job: int, attempt: int,
                 number: int, life: list[bool], effect: int | None,
                 key: tuple[int, ...] | None, token: int = 0):
        self.ev, self.t0, self.node, self.job, self.attempt = ev, t0, node, job, attempt
        self.number = number
        self.admitted = -1.0
        #: when its caller gives up (inf: never); whether it waited for a token or a place
        self.deadline, self.waits, self.counted = math.inf, False, False
        #: its caller's incarnation (``[False]`` once that node crashed); the text code of
        #: the side effect its ok answer is (None: not the run's effect); its idempotency key
        self.life, self.effect, self.key = life, effect, key
        #: waiting in the service's capacity queue
        self.queued = False
        #: its run's fencing token (the row's lock generation at the run's claim)
        self.token = token


def _waited(c: _Call, now: float) -> float:
    """Its wait for a token or a place (to its admission, or to its answer while it was
    still waiting); none for a call an outage answered or dropped at once."""
    if c.admitted >= 0:
        return c.admitted - c.t0
    return now - c.t0 if c.waits else 0.0


class Service:
    """A service in a run: its state, its queue, its bucket."""

    def __init__(self, spec: ServiceSpec, env: simpy.Environment, trace: Trace,
                 stream: Stream, idle: Callable[[], None] | None = None):
        """``idle``: called when the service has no call left to serve (a drained run
        waits for the calls whose callers left)."""
        self.spec, self.env, self.trace, self.stream = spec, env, trace, stream
        self.idle = idle
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
        #: the error of each outcome, by the caller's timeout
        self._texts: dict[float | None, tuple[str, ...]] = {}
        #: idempotency key -> the end of its call that succeeded (-1: still in progress)
        self.keys: dict[tuple[int, ...], float] = {}
        self.highest: dict[int, int] = {}  # with fencing: job -> the highest token read
        if spec.outages or spec.brownouts:
            env.process(self._health())

    # --- the caller's side -----------------------------------------------------------------

    def call(self, node: int, job: int, attempt: int, timeout: float | None = None,
             cut: bool = False, life: list[bool] | None = None, effect: int | None = None,
             key: tuple[int, ...] | None = None, token: int = 0
             ) -> Generator[Any, Any, Reply]:
        """Call the service (from a worker's generator: ``yield from``); its ``Reply``.
        ``cut``: the timeout is the worker's on the whole run, not the call's own; ``life``:
        the caller's incarnation (``[False]`` once its node crashed); ``effect``: the text
        code of the side effect an ok answer is (None: not the run's effect); ``key``: its
        idempotency key; ``token``: its run's fencing token."""
        env = self.env
        now = env.now
        number = self.calls
        self.calls += 1
        texts = self._texts.get(timeout)
        if texts is None:  # (the conflict's text enters the trace only if a run fails on it)
            texts = self._texts[timeout] = self.spec.texts(timeout)
            for t in texts[:CONFLICT] + (texts[FENCED:] if self.spec.fencing else ()):
                self.trace.text(t or None)
        self.trace.put(pack(now, K["service_call"], node, job, attempt, 0, number, 0, now,
                         self.name_code))
        c = _Call(env.event(), now, node, job, attempt, number,
                  _ALIVE if life is None else life, effect, key, token)
        if timeout is not None:
            c.deadline = now + timeout
            code = CUT if cut else TIMEOUT
            delay(env, timeout).callbacks.append(lambda _e: self._answer(c, code))
        if self.rate:
            self._limit(c, now)
        else:
            self._admit(c)
        code = yield c.ev
        t = env.now
        ok = code == OK or code == REPLAYED
        error = None if ok else texts[code]
        taken = (code == TIMEOUT or code == CUT) and (
            c.admitted >= 0 or (c.queued and self.spec.abandoned == "finish"))
        return Reply(ok, OUTCOMES[code], error, _waited(c, t), t - c.t0, taken)

    def _answer(self, c: _Call, code: int) -> None:
        if c.ev.triggered or not c.life[0]:  # answered already, or its caller crashed
            return
        now = self.env.now
        waited = _waited(c, now)
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
            delay(self.env, wait).callbacks.append(lambda _e: self._admit(c))

    def _admit(self, c: _Call) -> None:
        if c.ev.triggered and not c.queued:  # its caller gave up while it waited for a
            return                            # token (a client-side wait: no call made)
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
                c.waits = c.queued = True
                self.queue.append(c)
            return
        self._serve(c)

    def _serve(self, c: _Call) -> None:
        c.queued = False
        self.busy += 1
        c.admitted = self.env.now
        latency = self.spec.latency.sample(self.stream) * self.factor
        code = ERROR if self.share and self.stream.uniform() < self.share else OK
        if self.spec.fencing and c.token > self.highest.get(c.job, 0):
            self.highest[c.job] = c.token  # the request is read: its token is seen
        if c.key is not None:  # a repeat is a request like any: its latency, its place
            seen = self.keys.get(c.key)
            if seen is not None and (seen < 0 or c.admitted - seen
                                     <= self.spec.idempotency_window):
                code = CONFLICT if seen < 0 else REPLAYED
                c.key = None  # not the key's owner: its end changes nothing remembered
            else:
                self.keys[c.key] = -1.0  # in progress
        delay(self.env, latency).callbacks.append(lambda _e: self._done(c, code))

    def _done(self, c: _Call, code: int) -> None:
        self.busy -= 1
        # the write checks its token as it applies: older than one read since, refused
        if code == OK and self.spec.fencing and c.token < self.highest.get(c.job, 0):
            code = FENCED
        if c.key is not None:
            if code == OK:
                self.keys[c.key] = self.env.now
            else:  # nothing done: nothing to remember
                del self.keys[c.key]
        self._end(c, code)
        self._drain()
        if self.idle is not None and not self.busy and not self.queue:
            self.idle()

    def _end(self, c: _Call, code: int) -> None:
        """The service is done with ``c``: its answer to a caller still waiting, else its
        end at the service, and an effect that takes place though nobody hears of it."""
        gone = c.ev.triggered or not c.life[0]
        if not gone:
            self._answer(c, code)
            return
        now = self.env.now
        why = LEFT_TIMEOUT if c.life[0] else LEFT_CRASH
        took_effect = code == OK and c.effect is not None
        self.trace.put(pack(now, K["service_late"], c.node, c.job, c.attempt, code, c.number,
                         why + 2 * took_effect, now - c.t0, self.name_code))
        if took_effect:
            self.trace.put(pack(now, K["side_effect"], c.node, c.job, c.attempt, why, 0,
                             self.name_code, math.nan, c.effect))

    def _drain(self) -> None:
        """Admit queued calls while there is room; one whose caller left is served all the
        same, unless the service drops such calls (``abandoned: drop_queued``)."""
        queue, cap = self.queue, self.spec.capacity
        drop = self.spec.abandoned == "drop_queued"
        while queue and (cap is None or self.busy < cap):
            nxt = queue.popleft()
            if nxt.ev.triggered or not nxt.life[0]:
                if drop:
                    nxt.queued = False
                    continue
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
