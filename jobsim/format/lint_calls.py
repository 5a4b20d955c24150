"""The lints of a handler's calls to its services: a call that can hang its thread for good
(``call-without-timeout``), and an effect call whose timeout its service's answers outlast,
at its p99 or in its latency's tail, retried without an idempotency key
(``ambiguous-timeout``); and the p99s the other lints read (a distribution's, a service's
in its slowest brown-out, a handler's run). Each finding is a (code, dotted path, message)
as in ``lint``."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ..base import dists
from ..base.durations import format_duration
from ..executor.config import Scenario
from ..executor.handlers import Call

Found = tuple[str, str, str]


def calls_that_hang(sc: Scenario) -> Iterator[Found]:
    """A call without a timeout into an outage that never answers: its thread is gone."""
    for name, h in sc.handlers.items():
        if h.worker_timeout is not None:
            continue
        for i, step in enumerate(h.steps or ()):
            if not isinstance(step, Call) or step.timeout is not None:
                continue
            silent = [o for o in sc.services[step.service].outages if o.fail == "timeout"]
            if silent:
                yield ("call-without-timeout", f"handlers.{name}.calls[{i}]",
                       f"the call to {step.service!r} has no timeout, and its outage at "
                       f"{format_duration(silent[0].at)} never answers: each call made then "
                       f"holds its worker thread for the rest of the run; fix: a timeout on "
                       f"the call, or the handler's worker_timeout")


def ambiguous_timeouts(sc: Scenario) -> Iterator[Found]:
    """An effect call whose caller gives up before its service's slowest answers (p99, in
    its slowest brown-out), retried without a key the service remembers: the call that
    timed out goes on at the service and takes effect, and the retry makes it again."""
    for name, h in sc.handlers.items():
        i = h.effect_step
        if i is None or sc.retry_for("", name).total_attempts() < 2:
            continue
        step = h.steps[i]
        if step.idempotency_key == "job":
            continue
        spec = sc.services[step.service]
        met = _met(sc, name, spec)
        slowest = _slowest(spec, met)
        limits = [t for t in (step.timeout, h.worker_timeout) if t is not None]
        if not limits:
            continue
        if slowest <= min(limits):  # above the p99: still told where the tail, or the
            # wait in the service's queue, takes calls past it
            # (told by whichever takes more calls past it: the tail, or the queue)
            found = [f for f in (_tail_past(sc, name, i, step, spec, min(limits), met),
                                 _queued_past(sc, name, i, step, spec, min(limits))) if f]
            if found:
                yield max(found, key=lambda f: f[0])[1]
            continue
        which = "timeout" if step.timeout is not None and step.timeout == min(limits) \
            else "worker_timeout"
        key = ("its idempotency key is the attempt's, new on each retry, so the service "
               "cannot tell a retry from a new payment" if step.idempotency_key == "attempt"
               else "it sends no idempotency key")
        yield ("ambiguous-timeout", f"handlers.{name}.calls[{i}]",
               f"its caller gives up after {format_duration(min(limits))} ({which}), but "
               f"{step.service!r} answers in up to {format_duration(slowest)} (p99"
               f"{', in its brown-out' if met else ''}): a call that times out "
               f"goes on at the service and takes effect, the retry makes it again, and "
               f"{key}; fix: idempotency_key: job on the call, or a timeout above "
               f"{format_duration(slowest)}")


def _met(sc: Scenario, name: str, spec: Any) -> list[tuple[Any, float]]:
    """The brown-outs of ``spec`` that handler ``name``'s calls meet (``arrives``: one after
    the last of them slows nothing), each with about how many of its jobs fall due in it."""
    return [(b, _arrivals_in(sc, name, b.at, b.at + b.length)) for b in spec.brownouts
            if arrives(sc, name, b.at, b.at + b.length)]


def arrives(sc: Scenario, handler: str, t0: float, t1: float) -> bool:
    """Whether jobs of ``handler`` fall due between ``t0`` and ``t1``: a stream's or a
    listed job's (``_arrivals_in``), or a schedule's, at any time."""
    return _arrivals_in(sc, handler, t0, t1) > 0 or \
        any(r.handler == handler for r in sc.recurring)


def _tail_past(sc: Scenario, name: str, i: int, step: Any, spec: Any, limit: float,
               met: list[tuple[Any, float]]) -> tuple[float, Found] | None:
    """An effect call whose timeout is above its service's p99 but that the latency's tail
    still passes about once in the run's first calls or more (``TAIL_CALLS``): each such
    call takes effect at the service after its caller gave up, and the retry repeats it.
    ``met``: the brown-outs its calls meet (``_met``)."""
    calls = _jobs_of(sc, name)
    # a brown-out slows its calls by its factor: the tail passes the timeout more often then
    # (less its calls answered at once with an error)
    slowed = [(n, (1.0 - b.error_share) * spec.latency.beyond(limit / b.latency_factor))
              for b, n in met if b.latency_factor > 1.0]
    expected = spec.latency.beyond(limit) * (calls - sum(n for n, _ in slowed)) + \
        sum(n * past for n, past in slowed)
    share = expected / calls if calls else 0.0
    if expected < TAIL_CALLS:
        return None
    queued = (f", and a call that waits for one of its {spec.capacity:,} slots waits longer "
              f"still" if spec.capacity is not None and spec.when_full == "queue" else "")
    return share, ("ambiguous-timeout", f"handlers.{name}.calls[{i}]",
           f"its caller gives up after {format_duration(limit)}, above the p99 of "
           f"{step.service!r} ({format_duration(p99(spec.latency))}"
           f"{f'; {format_duration(_slowest(spec, met))} in its brown-out' if slowed else ''}"
           f"), but its latency's tail "
           f"passes that in {100 * share:.2g} % of calls: about "
           f"{expected:.2g} of the run's {calls:,} first calls, more with retries{queued}. "
           f"Each takes effect at the service after its caller gave up, and the retry makes "
           f"it again; fix: idempotency_key: job on the call")


#: an effect call's tail past its timeout is warned of from this many expected calls
TAIL_CALLS = 1.0


def _queued_past(sc: Scenario, name: str, i: int, step: Any, spec: Any,
                 limit: float) -> tuple[float, Found] | None:
    """An effect call whose timeout is above its service's p99 but that waits for one of
    the service's ``capacity`` slots (``when_full: queue``; ``abandoned: finish``, which
    serves a call whose caller left): the calls' rate from the file's streams against the
    slots, and by Erlang C (M/M/c) the share of calls whose wait leaves less than their
    mean latency before the timeout. Told where that is about one of the run's first calls
    or more; each takes effect after its caller gave up, and the retry repeats it. Not
    reckoned for a service with outages or brown-outs: their calls fail or slow apart from
    any steady queue."""
    if spec.capacity is None or spec.when_full != "queue" or spec.abandoned != "finish" or \
            spec.outages or spec.brownouts:  # (a steady queue: an outage's calls fail apart)
        return None
    mean = spec.latency.mean
    lam = sum(s.rate * sum(1 for c in (sc.handlers[s.handler].steps or ())
                           if isinstance(c, Call) and c.service == step.service)
              for s in sc.streams if s.rate and s.handler in sc.handlers)
    if mean <= 0 or lam <= 0:
        return None
    share = queue_past(spec.capacity, lam, 1.0 / mean, max(0.0, limit - mean))
    calls = _jobs_of(sc, name)
    if share * calls < TAIL_CALLS:
        return None
    busy = lam * mean / spec.capacity
    load = (f"{100 * busy:.0f} % busy" if busy < 1 else
            f"asked for {busy:.2g} times what they can do: its queue grows for as long "
            f"as the calls come")
    return share, ("ambiguous-timeout", f"handlers.{name}.calls[{i}]",
           f"its caller gives up after {format_duration(limit)}, above the p99 of "
           f"{step.service!r}, but the service's {spec.capacity:,} slots take about "
           f"{lam:.3g} calls/s of {format_duration(mean)} each ({load}): by Erlang C "
           + ("nearly all calls wait" if share >= 0.995 else
              f"about {float(f'{100 * share:.2g}'):g} % of calls wait") +
           f" in its queue past what the timeout leaves for "
           f"the call, about {share * calls:,.0f} of the run's {calls:,} first calls, more "
           f"with retries and where a poll's claims start their calls together. The service "
           f"serves each all the same (abandoned: finish) and it "
           f"takes effect after its caller gave up, and the retry makes it again; fix: "
           f"idempotency_key: job on the call, or capacity for the load")


def queue_past(c: int, lam: float, mu: float, t: float) -> float:
    """The share of calls to ``c`` servers (M/M/c, arrivals ``lam``, service rate ``mu``)
    that wait in the queue longer than ``t``: ``C(c, a) · e^-(cμ-λ)t`` (Erlang C), 1 where
    the servers cannot keep up."""
    a = lam / mu
    if a >= c:
        return 1.0
    term, total = 1.0, 1.0
    for k in range(1, c):
        term *= a / k
        total += term
    last = term * a / c / (1 - a / c)
    return last / (total + last) * math.exp(-(c * mu - lam) * t)


def _arrivals_in(sc: Scenario, handler: str, t0: float, t1: float) -> float:
    """About how many jobs of ``handler`` fall due between ``t0`` and ``t1``: each stream's
    rate over its span's overlap with it, a burst or a listed job where its instant is in
    it (a schedule's runs are not counted)."""
    n = 0.0
    for s in sc.streams:
        if s.handler != handler:
            continue
        first = s.start + s.due_in
        if not s.rate:
            n += s.count if t0 <= first < t1 else 0
            continue
        n += max(0.0, min(t1, first + s.count / s.rate) - max(t0, first)) * s.rate
    return n + sum(1 for j in sc.jobs if j.handler == handler and t0 <= j.at + j.due_in < t1)


def _jobs_of(sc: Scenario, handler: str) -> int:
    """The jobs of ``handler`` the file creates (listed, streams', schedules')."""
    return (sum(1 for j in sc.jobs if j.handler == handler)
            + sum(s.count for s in sc.streams if s.handler == handler)
            + sum(r.count for r in sc.recurring if r.handler == handler))


def p99(d: dists.Distribution) -> float:
    """The 99th percentile of a duration distribution, from its closed form."""
    if isinstance(d, dists.Constant):
        return d.value
    if isinstance(d, dists.Uniform):
        return d.low + 0.99 * (d.high - d.low)
    if isinstance(d, dists.Exponential):
        return d.mean * math.log(100.0)
    return d.p99


def _slowest(spec: Any, met: list[tuple[Any, float]]) -> float:
    """A service's p99 answer in the slowest of the brown-outs ``met``."""
    return p99(spec.latency) * max([1.0] + [b.latency_factor for b, _ in met])


def slowest_p99(spec: Any) -> float:
    """A service's p99 answer in its slowest brown-out (its latency's p99 without one)."""
    return p99(spec.latency) * max([1.0] + [b.latency_factor for b in spec.brownouts])


def run_p99(h: Any, services: dict[str, Any]) -> float:
    """The p99 of a handler's run, as its worker's own timeout bounds it; of a run that
    calls services, the sum of its steps' (a call: the latency's p99 in the slowest
    brown-out, or for ever into an outage that never answers, bounded by its timeout)."""
    t = h.hang_for if h.outcome == "hang" else p99(h.duration)
    if h.steps is not None:
        t = sum(_step_p99(services, s) for s in h.steps)
    return t if h.worker_timeout is None else min(t, h.worker_timeout)


def _step_p99(services: dict[str, Any], step: Any) -> float:
    if not isinstance(step, Call):
        return p99(step.duration)
    spec = services[step.service]
    t = slowest_p99(spec)
    if any(o.fail == "timeout" for o in spec.outages):
        t = math.inf
    return t if step.timeout is None else min(t, step.timeout)
