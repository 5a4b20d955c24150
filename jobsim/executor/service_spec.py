"""What a scenario declares of a downstream service (``ServiceSpec``, its outages and
brown-outs), and what a call's caller gets back (``Reply``) — the codes the trace's
``service_reply``, ``service_late`` and ``service_state`` events use. The service itself,
in a run, is ``executor/services.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..base.dists import ZERO, Distribution
from ..base.durations import format_duration

#: a reply's outcome, as the ``service_reply`` event's ``a`` codes it: ``timeout`` is the
#: call's own, ``worker_timeout`` the worker's timeout on the whole run cutting it short;
#: ``conflict``: a repeat of an idempotency key whose first call is still in progress;
#: ``replayed``: a repeat answered with the remembered answer (ok, no effect); ``fenced``: a
#: call whose fencing token is older than one the service has seen for its job (no effect)
OUTCOMES = ("ok", "error", "timeout", "refused", "rate_limited", "worker_timeout", "conflict",
            "replayed", "fenced")
OK, ERROR, TIMEOUT, REFUSED, LIMITED, CUT, CONFLICT, REPLAYED, FENCED = range(9)
#: why a call ended at the service with nobody waiting (``service_late``'s c, and the late
#: ``side_effect``'s a): its caller timed out (its own timeout or the worker's), or crashed
LEFT_TIMEOUT, LEFT_CRASH = 1, 2
#: what a service does with a call whose caller left while it waited in the queue
ABANDONED = ("finish", "drop_queued")
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
    #: a queued call whose caller left: served all the same, or dropped (``ABANDONED``)
    abandoned: str = "finish"
    #: how long a succeeded call's idempotency key is remembered
    idempotency_window: float = 86400.0
    #: refuse a call whose fencing token (its run's lock generation) is older than the
    #: highest it has seen for the job
    fencing: bool = False

    @property
    def error_text(self) -> str:
        return self.error or f"{self.name} 503 service unavailable"

    def texts(self, timeout: float | None = None) -> tuple[str, ...]:
        """The error of each outcome (``OUTCOMES``); ``ok`` has none."""
        after = f" after {format_duration(timeout)}" if timeout is not None else ""
        return ("", self.error_text, f"{self.name} timed out{after}",
                f"{self.name} busy: at capacity", f"{self.name} 429 too many requests",
                "processing took too long",
                f"{self.name} 409 conflict: a request with this idempotency key is in progress",
                "", f"{self.name} 409 stale fencing token")

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
    ok), the time waited for a token or a place, and the time from the call to the answer;
    ``ambiguous``: a timeout (the call's or the worker's) of a call the service had already
    taken (admitted, or queued by a service that finishes abandoned calls) — it goes on
    there, and may still take effect."""

    ok: bool
    outcome: str
    error: str | None
    waited: float
    took: float
    ambiguous: bool = False
