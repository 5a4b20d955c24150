"""Nodes' clocks: whose ``now`` a claim compares and writes.

A real executor writes ``lock_until = now + lock_time`` and compares ``lock_until < now``
with some clock: the node's own (Flowable, failsafe-executor and the lesson pass the node's
time as a parameter) or the database server's (``now()`` in the SQL; a broker's own clock).
With ``executor.clock: node`` a node whose clock runs ahead takes rows whose locks are
still live on the node that holds them, and fires due times early; one behind writes locks
shorter than it meant. With ``clock: database`` every node's statements use the server's
clock, and a node's offset changes nothing the table sees.

A node's clock reads ``at0 + (t − t0) × (1 + drift)`` at the true time ``t``: an offset
(``at0 − t0``) and a drift (seconds gained per second, above −1: a clock that stops or runs
backwards is refused). A ``clock`` fault steps it and/or sets a new drift at an instant.
Only nodes whose clock is not the true one have an entry (``Database.clocks``), so a run
without skew takes no extra step anywhere.
"""

from __future__ import annotations


class NodeClock:
    """One node's clock (see the module's doc)."""

    __slots__ = ("t0", "at0", "drift")

    def __init__(self, offset: float, drift: float, t0: float = 0.0):
        self.t0, self.at0, self.drift = t0, t0 + offset, drift

    @classmethod
    def traced(cls, x: float, c: int, t: float) -> NodeClock:
        """The clock a ``clock_set`` event at ``t`` says: ``x`` seconds ahead from then, a
        drift of ``c`` parts per billion (as ``sim/faults.set_clock`` writes it)."""
        return cls(float(x), int(c) / 1e9, float(t))

    def read(self, t: float) -> float:
        """What the clock says at the true time ``t``."""
        return self.at0 + (t - self.t0) * (1.0 + self.drift)

    def offset(self, t: float) -> float:
        """How far ahead (negative: behind) of true time it is at ``t``."""
        return self.read(t) - t

    def set(self, t: float, step: float, drift: float | None) -> None:
        """At ``t``: jump by ``step`` and, if given, run at a new ``drift`` from then."""
        self.at0, self.t0 = self.read(t) + step, t
        if drift is not None:
            self.drift = drift

    def true_time(self, reading: float) -> float:
        """The true instant at which the clock (as it runs now) reads ``reading``."""
        return self.t0 + (reading - self.at0) / (1.0 + self.drift)
