"""The trace: the one way a run is observed.

Every event of a run is a row of ten columns kept in typed ``array`` buffers — no Python
object per event — so a million-job run fits in memory and hashes quickly. Metrics, checks,
the narrative and plots are pure functions of the trace.

Columns: ``time`` (seconds), ``kind``, ``node`` (index into ``nodes``, -1 for none), ``job``
(-1 for none), ``attempt``, three integers ``a``, ``b``, ``c``, a float ``x`` and ``text``
(index into ``texts``, -1 for none). What ``a``, ``b``, ``c``, ``x`` and ``text`` mean depends
on the kind; ``KINDS`` documents each. The row number is the event's sequence number: events
at the same simulated time keep the order in which they happened.

``sha256()`` hashes the columns as little-endian bytes plus the name tables, so it is the
same on every machine and under any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

import hashlib
from array import array

import numpy as np

#: kind → meaning of (attempt, a, b, c, x, text). Codes are positions in this table.
KINDS: dict[str, str] = {
    "run_start": "x=horizon (inf when drained)",
    "job_created": "a=kind (0 async, 1 timer), b=priority, x=due, text=handler",
    "tick": "the fake clock ticks; text=note",
    "acquire": "a=rows asked, b=rows got, c=lost races, x=statement latency, text=strategy",
    "locked": "a=previous owner (-1 none), b=1 if the previous lock was still valid, x=lock_until",
    "exec_start": "attempt=execution number of the job, a=thread",
    "side_effect": "attempt, text=what the handler says",
    "exec_end": "attempt, a=1 ok / 0 error, text=error",
    "completed": "a=rows deleted (0: the row was gone), b=1 if another node held the lock",
    "retry_scheduled": "attempt, a=retries left, x=new due time, text=error",
    "dead_lettered": "attempt, text=error",
    "unlocked": "text=reason",
    "lock_extended": "a=rows extended, x=new lock_until",
    "timer_due": "a timer moved to the job table; x=its due time",
    "polls_skipped": "a=empty polls counted, not simulated (nothing could change their answer)",
    "pending": "a job still in the table at the end; text=why",
    "run_end": "a=jobs created, b=jobs pending",
    "node_crashed": "",
    "node_restarted": "",
    "node_paused": "x=pause length",
    "node_resumed": "",
    "stale_write": "a write that found its row gone or taken; text=statement",
}
KIND_NAMES: tuple[str, ...] = tuple(KINDS)
K = {name: i for i, name in enumerate(KIND_NAMES)}

COLUMNS = ("time", "kind", "node", "job", "attempt", "a", "b", "c", "x", "text")
_CODES = ("d", "b", "h", "q", "i", "q", "q", "q", "d", "i")
_DTYPES = ("<f8", "i1", "<i2", "<i8", "<i4", "<i8", "<i8", "<i8", "<f8", "<i4")
NAN = float("nan")


class Trace:
    """Columnar event buffers with interned node names and texts."""

    def __init__(self) -> None:
        self.cols = tuple(array(code) for code in _CODES)
        self.nodes: list[str] = []
        self._node_ix: dict[str, int] = {}
        self.texts: list[str] = []
        self._text_ix: dict[str, int] = {}
        (self._t, self._k, self._n, self._j, self._at, self._a, self._b, self._c, self._x,
         self._s) = (col.append for col in self.cols)

    def node(self, name: str) -> int:
        """The code of a node name (registered on first use)."""
        ix = self._node_ix.get(name)
        if ix is None:
            ix = self._node_ix[name] = len(self.nodes)
            self.nodes.append(name)
        return ix

    def text(self, value: str | None) -> int:
        """The code of a text (interned on first use); -1 for ``None``."""
        if value is None:
            return -1
        ix = self._text_ix.get(value)
        if ix is None:
            ix = self._text_ix[value] = len(self.texts)
            self.texts.append(value)
        return ix

    def add(self, time: float, kind: int, node: int = -1, job: int = -1, attempt: int = 0,
            a: int = 0, b: int = 0, c: int = 0, x: float = NAN, text: int = -1) -> None:
        """Append one event (codes, not names: see ``K``, ``node()``, ``text()``)."""
        self._t(time)
        self._k(kind)
        self._n(node)
        self._j(job)
        self._at(attempt)
        self._a(a)
        self._b(b)
        self._c(c)
        self._x(x)
        self._s(text)

    def __len__(self) -> int:
        return len(self.cols[0])

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns as numpy arrays (copies)."""
        return {name: np.frombuffer(col, dtype=col.typecode).copy() if len(col) else
                np.zeros(0, dtype=np.dtype(col.typecode))
                for name, col in zip(COLUMNS, self.cols)}

    def sha256(self) -> str:
        """A hash of the trace that is the same on every machine."""
        h = hashlib.sha256()
        h.update(("|".join(COLUMNS) + "\n" + "|".join(KIND_NAMES) + "\n").encode())
        h.update(("\x1f".join(self.nodes) + "\n").encode())
        h.update(("\x1f".join(self.texts) + "\n").encode())
        for col, dtype in zip(self.cols, _DTYPES):
            h.update(np.asarray(col, dtype=np.dtype(col.typecode)).astype(dtype).tobytes())
        return h.hexdigest()
