"""Distributions of durations: handler run times and statement latencies.

Each is a small frozen value with ``sample(stream)`` (seconds) and ``mean``. The forms are the
ones a scenario can name:

- ``constant`` — always ``value``;
- ``uniform`` — between ``low`` and ``high``;
- ``exponential`` — with ``mean`` (memoryless service, the M in M/M/c);
- ``lognormal`` — by ``median`` and ``p99``, the way latencies are usually quoted.
"""

from __future__ import annotations

import math
from functools import cached_property
from dataclasses import dataclass

from .rng import Stream

Z99 = 2.3263478740408408  # the standard normal's 99th percentile


@dataclass(frozen=True)
class Constant:
    value: float

    def sample(self, stream: Stream) -> float:
        return self.value

    @property
    def mean(self) -> float:
        return self.value

    @property
    def is_zero(self) -> bool:
        return self.value == 0.0

    def beyond(self, t: float) -> float:
        """The share of draws longer than ``t``."""
        return float(self.value > t)


@dataclass(frozen=True)
class Uniform:
    low: float
    high: float

    def sample(self, stream: Stream) -> float:
        return self.low + (self.high - self.low) * stream.uniform()

    @property
    def mean(self) -> float:
        return (self.low + self.high) / 2

    @property
    def is_zero(self) -> bool:
        return self.low == 0.0 and self.high == 0.0

    def beyond(self, t: float) -> float:
        if self.high <= self.low:
            return float(self.low > t)
        return min(1.0, max(0.0, (self.high - t) / (self.high - self.low)))


@dataclass(frozen=True)
class Exponential:
    mean: float

    def sample(self, stream: Stream) -> float:
        return self.mean * stream.exponential()

    @property
    def is_zero(self) -> bool:
        return self.mean == 0.0

    def beyond(self, t: float) -> float:
        if t < 0:
            return 1.0
        return math.exp(-t / self.mean) if self.mean > 0 else 0.0


@dataclass(frozen=True)
class LogNormal:
    median: float
    p99: float

    @cached_property
    def sigma(self) -> float:  # computed once: every statement's latency draws with it
        return (math.log(self.p99) - math.log(self.median)) / Z99

    def sample(self, stream: Stream) -> float:
        return self.median * math.exp(self.sigma * stream.normal())

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma**2 / 2)

    @property
    def is_zero(self) -> bool:
        return False

    def beyond(self, t: float) -> float:
        if t <= 0:
            return 1.0
        if self.sigma == 0:
            return float(self.median > t)
        return 0.5 * math.erfc((math.log(t) - math.log(self.median)) / (self.sigma * math.sqrt(2)))


Distribution = Constant | Uniform | Exponential | LogNormal
ZERO = Constant(0.0)
