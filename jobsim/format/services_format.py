"""The file format of downstream services (``services:``) and of a handler's ``calls:``,
their cross checks, and how they are built into ``ServiceSpec`` and handler steps.

::

    services:
      payments:
        latency: {uniform: {low: 100ms, high: 300ms}}
        capacity: 20                 # concurrent calls (absent: no limit)
        when_full: queue             # or refuse
        rate_limit: {rate: 10/s, burst: 10, over: refuse}   # or over: wait
        error: "payments 503"
        outages: [{at: 1m, for: 5m, fail: fast}]           # or fail: timeout
        brownouts: [{at: 10m, for: 2m, latency_factor: 3, error_share: 0.2}]
        recovery: {below: 20/s, over: 10s}

    handlers:
      charge:
        calls:
          - work: 20ms               # its own work
          - {service: payments, timeout: 2s}
          - work: 5ms
"""

from __future__ import annotations

from typing import Any

from ..base.errors import Problem
from ..executor.handlers import Call, Work
from ..executor.service_spec import ABANDONED, Brownout, Outage, ServiceSpec
from .spec import Const, Dur, Either, Enum, Int, ListOf, MapOf, Num, Obj, Str, is_map_with, \
    show, suggest


def rate_of(text: str) -> float | None:
    """A rate like ``10/s``, ``30/m`` or ``100/h`` a second; None when it is not one."""
    try:
        num, unit = text.split("/")
        per = {"s": 1.0, "m": 60.0, "h": 3600.0}[unit.strip()]
        value = float(num)
    except (ValueError, KeyError):
        return None
    rate = value / per
    return rate if 0 < rate <= 1e9 else None


#: units a rate is often written with, and the one the file takes for each
_SPELT = {"sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "m", "mins": "m",
          "minute": "m", "minutes": "m", "hr": "h", "hrs": "h", "hour": "h", "hours": "h"}


def rate_hint(text: Any) -> str:
    """"did you mean '25/s'?" for a rate written ``25/sec`` (or ``/min``, ``/hour``…)."""
    if not isinstance(text, str) or text.count("/") != 1:
        return ""
    num, unit = text.split("/")
    short = _SPELT.get(unit.strip().lower())
    return f"did you mean '{num.strip()}/{short}'?" if short and \
        rate_of(f"{num}/{short}") is not None else ""


def rate_field(doc: str) -> Either:
    """A rate above zero: ``10/s``, ``600/m``, ``36000/h``, or a number a second."""
    return Either([(lambda v: isinstance(v, str), Const(
        lambda v: rate_of(v) is not None, "a rate above zero like 10/s, 600/m or 100/h",
        {"type": "string", "pattern": r"^\d+(\.\d+)?/(s|m|h)$"}, hint=rate_hint)),
        (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
         Num(lo=1e-9, hi=1e9))], "a rate above zero like 10/s (or a number a second)",
        doc=doc)


def per_second(v: Any) -> float:
    """A validated rate (``10/s`` or a number) in calls or jobs a second."""
    return rate_of(v) if isinstance(v, str) else float(v)  # type: ignore[return-value]


def service_format(dist: Any) -> MapOf:
    """``services:`` (``dist`` is the file's distribution field)."""
    window = {"at": Dur(doc="when it starts"), "for": Dur(positive=True, doc="how long")}
    return MapOf(Obj({
        "latency": Either(dist.options, dist.expected, doc="each call's service time"),
        "capacity": Int(lo=1, hi=1_000_000, doc="calls served at once (absent: no limit)"),
        "when_full": Enum(("queue", "refuse"), "queue",
                          "a call beyond the capacity waits in a FIFO queue, or is refused "
                          "at once (busy)"),
        "rate_limit": Obj({
            "rate": rate_field("tokens a second"),
            "burst": Int(lo=1, hi=1_000_000, doc="the bucket's size (it starts full); "
                                                  "absent: 1"),
            "over": Enum(("refuse", "wait"), "refuse",
                         "a call that finds no token: refused at once with a 429 (a "
                         "gateway), or waits for the next (a client-side limiter)")},
            ("rate",), doc="a token bucket"),
        "error": Str(doc="the service's error, in an outage and a brown-out's share "
                         "(default: '<name> 503 service unavailable')"),
        "outages": ListOf(Obj({**window, "fail": Enum(
            ("fast", "timeout"), "fast", "calls fail at once with the service's error, or "
                                         "are never answered (the caller's timeout ends "
                                         "them)")}, ("at", "for")), max_len=1000),
        "brownouts": ListOf(Obj({**window,
                                 "latency_factor": Num(1.0, lo=1.0, hi=1e6,
                                                       doc="latency × this"),
                                 "error_share": Num(0.0, lo=0.0, hi=1.0,
                                                    doc="the share of calls answered with "
                                                        "the service's error")},
                                ("at", "for")), max_len=1000),
        "recovery": Obj({"below": rate_field("the load (calls a second) under which it "
                                             "comes back"),
                         "over": Dur(10.0, positive=True, doc="the window the load is counted "
                                                              "over")},
                        ("below",), doc="after an outage, stay down while the service "
                                        "receives more than `below` calls a second"),
        "abandoned": Enum(ABANDONED, "finish",
                          "a call whose caller left (timed out, crashed) while it waited in "
                          "the capacity queue: served all the same, taking effect, as most "
                          "servers do (finish), or dropped unserved (drop_queued); an admitted "
                          "call always runs to its end"),
        "idempotency_window": Dur(86400.0, positive=True,
                                  doc="how long the service remembers the idempotency key of "
                                      "a call that succeeded, answering a repeat with its "
                                      "answer and no second effect (default 24h)"),
        "fencing": Const(lambda v: isinstance(v, bool), "true or false", {"type": "boolean"},
                         False, doc="every call carries its run's fencing token (the row's "
                                    "lock generation at the run's claim); the service "
                                    "remembers the highest it has read per job and refuses "
                                    "a write with an older one (409, no effect)"),
    }), max_len=100, doc="downstream services the handlers call")


def calls_format(dist: Any) -> ListOf:
    """A handler's ``calls:`` steps."""
    call = Obj({"service": Str(), "timeout": Dur(positive=True, doc="the caller's timeout "
                                                                    "(absent: none)"),
                "effect": Const(lambda v: isinstance(v, bool), "true or false",
                                {"type": "boolean"}, False,
                                doc="its ok answer is the run's side effect (default: the "
                                    "last call's)"),
                "breaker": Obj({"after": Int(lo=1, hi=1_000_000, doc="failed calls in a row "
                                                                     "that open it"),
                                "open_for": Dur(positive=True, doc="how long it stays open "
                                                                   "before a trial call")},
                               ("after", "open_for"),
                               doc="a circuit breaker in the worker, per node: while open, "
                                   "calls fail at once without reaching the service"),
                "idempotency_key": Enum(("job", "attempt"), doc=
                                        "the idempotency key the call sends: the job's, the "
                                        "same on every attempt (a repeat of a call that "
                                        "succeeded is answered without a second effect), or "
                                        "a new one each attempt (which protects nothing "
                                        "across retries); absent: none")},
               ("service",))
    return ListOf(Either([
        (lambda v: isinstance(v, str), Str(doc="a service's name")),
        (is_map_with("work"), Obj({"work": Either(dist.options, dist.expected)}, ("work",))),
        (is_map_with("service"), call),
    ], "a service's name, {service: NAME, timeout: D, effect: true, breaker: {after, open_for}, "
       "idempotency_key: job} or {work: DURATION}"),
        min_len=1, max_len=100,
        doc="the run as steps, in order: calls to services and the handler's own work; the "
            "first call that fails fails the run with its error")


#: keys of a drawn run that a handler with calls does not have
_DRAWN = {"duration": "put its own work among the calls as {work: D}",
          "outcome": "its outcome follows from its calls",
          "error": "its error is the failing call's",
          }


def service_checks(v: dict[str, Any], problems: list[Problem]) -> None:
    """Calls name declared services; a handler with calls has no drawn outcome; health
    windows of one kind do not overlap."""
    services = v.get("services") if isinstance(v.get("services"), dict) else {}
    names = tuple(services)
    called: set[str] = set()
    handlers = v.get("handlers") if isinstance(v.get("handlers"), dict) else {}
    for hname, h in handlers.items():
        if not isinstance(h, dict) or not isinstance(h.get("calls"), list):
            continue
        for key, why in _DRAWN.items():
            if key in h:
                problems.append(Problem(f"handlers.{hname}.{key}", "no " + key + " beside "
                                        "calls", show(h[key]), why))
        side = h.get("side_effect")
        if isinstance(side, dict) and "at" in side and side["at"] != "commit":
            problems.append(Problem(f"handlers.{hname}.side_effect.at", "no `at` beside calls",
                                    show(side["at"]), "mark the call that is the side effect "
                                                      "with effect: true, or at: commit for a "
                                                      "row written with the completion"))
        if isinstance(side, dict) and side.get("fencing"):
            problems.append(Problem(f"handlers.{hname}.side_effect.fencing", "no fencing "
                                    "beside calls", show(side["fencing"]),
                                    "a call's effect is the service's write: set fencing: "
                                    "true on the service it calls"))
        marked = 0
        for i, step in enumerate(h["calls"]):
            name = step if isinstance(step, str) else (
                step.get("service") if isinstance(step, dict) else None)
            if isinstance(step, dict) and step.get("effect") is True:
                marked += 1
            if isinstance(name, str):
                called.add(name)
            if isinstance(name, str) and name not in names:
                where = f"handlers.{hname}.calls[{i}]" + ("" if isinstance(step, str)
                                                          else ".service")
                problems.append(Problem(where, "the name of a service declared under services"
                                        + (f" ({', '.join(names)})" if names else
                                           " (the file declares none)"), show(name),
                                        suggest(name, names)))
        if marked > 1:
            problems.append(Problem(f"handlers.{hname}.calls", "at most one call marked "
                                    "effect: true", f"{marked}"))
        if marked and isinstance(side, dict) and side.get("at") == "commit":
            problems.append(Problem(f"handlers.{hname}.side_effect.at", "one side effect: a "
                                    "call marked effect: true or at: commit, not both",
                                    "commit"))
    for sname, s in services.items():
        if not isinstance(s, dict):
            continue
        if s.get("fencing") is True and sname not in called:
            problems.append(Problem(f"services.{sname}.fencing", "a service some handler's "
                                    "calls name (a fencing check on a service nobody calls "
                                    "guards nothing)", "true on a service no handler calls"))
        for kind in ("outages", "brownouts"):
            spans = sorted((w["at"], w["at"] + w["for"], i)
                           for i, w in enumerate(s.get(kind) or [])
                           if isinstance(w, dict) and isinstance(w.get("at"), float)
                           and isinstance(w.get("for"), float))
            for (a0, a1, i), (b0, _b1, k) in zip(spans, spans[1:]):
                if b0 < a1:
                    problems.append(Problem(f"services.{sname}.{kind}[{k}]",
                                            f"a window that starts after {kind}[{i}] ends",
                                            f"it starts at {b0:g}s, before {a1:g}s"))


def build_services(specs: dict[str, Any], build_dist: Any) -> dict[str, ServiceSpec]:
    out = {}
    for name, s in (specs or {}).items():
        rl = s.get("rate_limit")
        rec = s.get("recovery")
        out[name] = ServiceSpec(
            name, build_dist(s.get("latency")), s.get("capacity"), s["when_full"],
            (per_second(rl["rate"]), float(rl.get("burst", 1)), rl["over"]) if rl else None,
            tuple(Outage(o["at"], o["for"], o["fail"]) for o in s.get("outages", [])),
            tuple(Brownout(b["at"], b["for"], b["latency_factor"], b["error_share"])
                  for b in s.get("brownouts", [])),
            (per_second(rec["below"]), rec["over"]) if rec else None, s.get("error", ""),
            s["abandoned"], s["idempotency_window"], s["fencing"])
    return out


def build_steps(calls: list[Any], build_dist: Any) -> tuple[Work | Call, ...]:
    steps: list[Work | Call] = []
    for step in calls:
        if isinstance(step, str):
            steps.append(Call(step))
        elif "work" in step:
            steps.append(Work(build_dist(step["work"])))
        else:
            b = step.get("breaker")
            steps.append(Call(step["service"], step.get("timeout"), step["effect"],
                              (b["after"], b["open_for"]) if b else None,
                              step.get("idempotency_key")))
    return tuple(steps)
