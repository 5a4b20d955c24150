"""One root seed, many named and independent random streams.

Every source of randomness in a run asks for a stream by name — ``"handler/bureau-call"``,
``"db/latency/node-A"``, ``"workload/orders"``. The stream's generator is derived from the root
seed and a SHA-256 of its name with numpy's ``SeedSequence``, so adding a node or a handler
never shifts the draws of another, and the same name gives the same numbers under any
``PYTHONHASHSEED`` (Python's ``hash`` is never used).

Scalar draws from a numpy ``Generator`` cost microseconds each; a simulation makes millions.
A ``Stream`` therefore draws standard variates in blocks and hands them out one by one. The
block size is fixed, so the sequence a stream yields depends only on the seed and the name.
"""

from __future__ import annotations

import hashlib

import numpy as np

_BLOCK = 4096


def _name_key(name: str) -> list[int]:
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


class Stream:
    """A named stream: buffered standard uniform, exponential and normal variates."""

    __slots__ = ("name", "generator", "_u", "_ui", "_e", "_ei", "_n", "_ni")

    def __init__(self, name: str, generator: np.random.Generator):
        self.name = name
        self.generator = generator
        self._u: list[float] = []
        self._ui = 0
        self._e: list[float] = []
        self._ei = 0
        self._n: list[float] = []
        self._ni = 0

    def uniform(self) -> float:
        """A draw from U[0, 1)."""
        if self._ui >= len(self._u):
            self._u = self.generator.random(_BLOCK).tolist()
            self._ui = 0
        v = self._u[self._ui]
        self._ui += 1
        return v

    def exponential(self) -> float:
        """A draw from the standard exponential (mean 1)."""
        if self._ei >= len(self._e):
            self._e = self.generator.standard_exponential(_BLOCK).tolist()
            self._ei = 0
        v = self._e[self._ei]
        self._ei += 1
        return v

    def normal(self) -> float:
        """A draw from the standard normal."""
        if self._ni >= len(self._n):
            self._n = self.generator.standard_normal(_BLOCK).tolist()
            self._ni = 0
        v = self._n[self._ni]
        self._ni += 1
        return v


class Streams:
    """The factory of named streams of one root seed.

    >>> a = Streams(7).stream("handler/x").uniform()
    >>> b = Streams(7).stream("handler/x").uniform()
    >>> a == b
    True
    >>> Streams(7).stream("handler/y").uniform() == a
    False
    """

    def __init__(self, seed: int):
        if not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer (got {seed!r})")
        self.seed = seed
        self._streams: dict[str, Stream] = {}

    def stream(self, name: str) -> Stream:
        """The stream called ``name``; asking twice gives the same object."""
        s = self._streams.get(name)
        if s is None:
            seq = np.random.SeedSequence(entropy=self.seed, spawn_key=_name_key(name))
            s = Stream(name, np.random.Generator(np.random.PCG64(seq)))
            self._streams[name] = s
        return s
