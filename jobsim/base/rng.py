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
from collections.abc import Callable
from itertools import chain

import numpy as np

_BLOCK = 4096


def _name_key(name: str) -> list[int]:
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return [int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4)]


class Stream:
    """A named stream: buffered standard uniform, exponential and normal variates.

    Each kind of draw is an endless chain of blocks, a block drawn from the generator when
    the one before is used up (at the same draw, so the same numbers, as an index into a
    list would give): ``uniform()``, ``exponential()`` and ``normal()`` are the chains'
    ``__next__``, a call that runs no Python code between blocks (a simulation makes
    millions of them)."""

    __slots__ = ("name", "generator", "uniform", "exponential", "normal")

    def __init__(self, name: str, generator: np.random.Generator):
        self.name = name
        self.generator = generator
        #: a draw from U[0, 1)
        self.uniform: Callable[[], float] = _blocks(generator.random)
        #: a draw from the standard exponential (mean 1)
        self.exponential: Callable[[], float] = _blocks(generator.standard_exponential)
        #: a draw from the standard normal
        self.normal: Callable[[], float] = _blocks(generator.standard_normal)


def _blocks(draw: Callable[[int], np.ndarray]) -> Callable[[], float]:
    """The next of ``draw``'s variates, drawn ``_BLOCK`` at a time as they are used up."""
    return chain.from_iterable(iter(lambda: draw(_BLOCK).tolist(), None)).__next__


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
