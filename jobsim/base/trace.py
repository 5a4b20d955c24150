"""The trace: the one way a run is observed.

Every event of a run is a row of ten columns, recorded packed into one ``bytearray`` and
moved into typed numpy columns now and then — no Python object per event — so a million-job
run fits in memory and hashes quickly. Metrics, checks,
the narrative and plots are pure functions of the trace.

Columns: ``time`` (seconds), ``kind``, ``node`` (index into ``nodes``, -1 for none), ``job``
(-1 for none), ``attempt``, three integers ``a``, ``b``, ``c``, a float ``x`` and ``text``
(index into ``texts``, -1 for none). What ``a``, ``b``, ``c``, ``x`` and ``text`` mean depends
on the kind; ``KINDS`` documents each. The row number is the event's sequence number: events
at the same simulated time keep the order in which they happened.

``sha256()`` hashes the columns as little-endian bytes plus the name tables, so it is the
same on every machine and under any ``PYTHONHASHSEED``. Kinds are only ever added at the end
of ``KINDS``, and the hash names the kinds up to the last one its trace has (never fewer than
the ``HASHED_KINDS`` it always named): a new kind changes the hash of the traces that have it,
and no other.
"""

from __future__ import annotations

import hashlib
import struct

import numpy as np

#: kind → meaning of (attempt, a, b, c, x, text). Codes are positions in this table.
KINDS: dict[str, str] = {
    "run_start": "x=horizon (inf when drained)",
    "job_created": "a=kind (0 async, 1 timer, 2 a boundary timer's timer job: a row of the "
                   "timer table that fires its task's boundary event when it runs), "
                   "b=priority, c=name (a text code; -1 none), x=due, text=handler (a timer "
                   "job's: its task's)",
    "tick": "the fake clock ticks; text=note",
    "acquire": "attempt=serialization failures / SQLITE_BUSY, a=rows asked, b=rows got, "
               "c=lost races, x=statement latency, text=strategy",
    "locked": "a=previous owner (-1 none), b=1 if the previous lock was still valid, "
              "c=a broker's deadline in Unix epoch ms (clock.epoch + activation + the job "
              "timeout; 0 none), x=lock_until",
    "exec_start": "attempt=execution number of the job, a=thread",
    "side_effect": "a side effect before the end of the run; attempt, text=what the handler "
                   "says; a=0 the worker's, or at a service after its caller left: a=1 it "
                   "had timed out, 2 its node had crashed (c=the service's name, a text code)",
    "exec_end": "attempt, a=1 ok / 0 error, b=1 if the side effect happened at this instant "
                "(at the end of the run), text=error, or what the handler says at its side "
                "effect",
    "completed": "a=rows deleted; b=1 another node held the lock (overridden if a=1, the "
                 "owner guard refused if a=0), b=2 the row is there but not locked by this node "
                 "(a=0), b=0 otherwise (a=0: the row was gone)",
    "retry_scheduled": "attempt, a=retries left, c=the worker's wait before failing (ms), "
                       "x=new due time, text=error",
    "dead_lettered": "attempt, a=where the job went when its retries ran out: 0 the dead-letter "
                     "table, 1 an incident (JOB_FAILED, critical; the Zeebe-like server), 2 "
                     "failed (failsafe-executor: kept until retry or cancel), c=the "
                     "worker's wait before failing (ms), text=error",
    "unlocked": "text=reason: queue full (Flowable's unacquire), lock expired (reset), "
                "server restart",
    "lock_extended": "a=rows extended, x=new lock_until",
    "timer_due": "a timer moved to the job table; x=its due time",
    "polls_skipped": "a=empty polls counted, not simulated (nothing could change their answer)",
    "pending": "a job still in the table at the end; a=retries left, text=why",
    "run_end": "a=jobs created, b=jobs pending",
    "node_crashed": "a=running executions lost, b=queued jobs lost",
    "node_restarted": "",
    "node_paused": "x=pause length",
    "node_resumed": "",
    "stale_write": "a write that found its row gone or taken; text=statement",
    "statement_failed": "the node is cut off from the database; text=statement",
    "db_slowed": "x=latency multiplier (1 = back to normal)",
    "partition": "a=1 cut off, 0 healed; x=statement timeout",
    "server_restarted": "the Zeebe-like server restarted: a=activated jobs restored to waiting",
    "withdrawn": "an interrupting boundary timer withdrew the job (later complete/fail: 404, "
                 "the row is gone); a=the timer job that fired it, run on node (x=its due "
                 "time), or 0: the engine's own timer, at its instant",
    "boundary_timer": "a non-interrupting boundary timer fired; the job stays; a, x: as for "
                      "withdrawn",
    "revived": "an operation moved a failed or dead-lettered job back to waiting; a=retries, "
               "text=the operation (retry, move)",
    "cancelled": "an operation cancelled a failed job (deleted); or, a=its task, a boundary "
                 "timer's timer job deleted with its task's activity, by node's completion of "
                 "the task (text=why)",
    "submit_ignored": "a submit with an id already in the table did nothing (idempotent "
                      "submit); job=the task that holds the id, text=handler, c=1 + the "
                      "text of the name the submit gave (0: none), which names that task",
    "suspended": "an operation moved the job to the suspended table (a=1), never acquired "
                 "there, or back (a=0: activated)",
    "resubmitted": "a submit with an id whose task is gone (done or cancelled: its row "
                   "deleted) inserted a new task, the job of this event (jobsim numbers it "
                   "afresh: one story per job), right after its job_created; a=the id it was "
                   "submitted under",
    "service_call": "a call to a downstream service (text=its name) by the execution of job "
                    "on node; b=the call's number at that service (0, 1, …), x=the instant of "
                    "the call",
    "service_reply": "the caller has the service's answer (text=the service): a=outcome (0 "
                     "ok, 1 the service's error, 2 timed out, 3 refused: at capacity, 4 rate "
                     "limited: 429, 5 the worker's timeout, 6 conflict: its idempotency key's "
                     "call in progress, 7 replayed: the key's remembered answer, ok, no "
                     "effect, 8 fenced: a stale fencing token, no effect), b=the call's number, c=its wait for a token or a place "
                     "(µs), x=seconds from the call to the answer",
    "service_state": "a service's health changed (text=the service): a=0 up, 1 down, 2 "
                     "brown-out; down: b=1 held down by its load past the outage's end, c=1 "
                     "its calls time out (0: they fail at once); brown-out: c=the share of "
                     "calls answered with its error (parts per million), x=the latency factor",
    "service_late": "a service ended a call whose caller had left (text=the service): job, "
                    "attempt and node are the caller's, a=outcome (as service_reply's), "
                    "b=the call's number, c=1 its caller had timed out, 2 its node had "
                    "crashed, +2 if it took effect (the run's side effect, recorded beside it), "
                    "x=seconds from the call",
    "clock_set": "the node's clock (executor.clock: node) is set: x=seconds ahead of true "
                 "time (negative: behind) from this instant, c=its drift in parts per "
                 "billion (seconds gained per second × 10⁹); at the start for a skewed node, "
                 "and at each clock fault",
    "effect_refused": "a side effect written with the run's fencing token was refused (no "
                      "effect): attempt, a=the run's token (the row's lock generation at its "
                      "claim), b=the row's generation now (-1: the row is gone), text=what the "
                      "handler says at its side effect; the run ends with an error",
    "operation_ignored": "an operation named a job it cannot act on and did nothing: "
                         "text=the operation, job=the job (-1: no job of that name yet), "
                         "a=where it was: 0 no such job (not created yet, or gone), 1 "
                         "waiting, 2 held by node, 3 in the dead-letter table, 4 failed, 5 "
                         "an incident, 6 suspended, 7 held by node, which still runs or "
                         "holds it (fail)",
}
KIND_NAMES: tuple[str, ...] = tuple(KINDS)
K = {name: i for i, name in enumerate(KIND_NAMES)}
#: the kinds every hash names (``KINDS`` up to ``suspended``, as it stood when the hash was
#: fixed); a later kind is named only by a trace that has it, so adding one moves no other hash
HASHED_KINDS = 32

COLUMNS = ("time", "kind", "node", "job", "attempt", "a", "b", "c", "x", "text")
_DTYPES = ("<f8", "i1", "<i2", "<i8", "<i4", "<i8", "<i8", "<i8", "<f8", "<i4")
NAN = float("nan")


_CHUNK = 1 << 16
#: one event as it is recorded: the ten fields packed little-endian, in the columns' dtypes
RECORD = struct.Struct("<dbhqiqqqdi")
_RECORD_DTYPE = np.dtype({"names": list(COLUMNS), "formats": list(_DTYPES)})
assert RECORD.size == _RECORD_DTYPE.itemsize
#: ``pack(time, kind, node, job, attempt, a, b, c, x, text)`` → one record's bytes
pack = RECORD.pack
#: a run compacts its trace into typed columns every this many bytes of records
COMPACT_BYTES = RECORD.size << 19


class Trace:
    """Columnar event buffers with interned node names and texts.

    Events are packed by one precompiled ``struct`` (``RECORD``, the columns' own dtypes)
    into a ``bytearray``; hot code appends ``trace.put(pack(...))`` — two C calls, no tuple
    and no Python object kept per event — and other code calls ``add`` or ``emit`` with the
    ten fields. ``compact()`` — called by the run now and then — moves the records into
    typed columns, so memory stays near the typed size (59 bytes an event, then 45). An
    integer field given a float is an error, not a silent truncation.
    """

    def __init__(self) -> None:
        self._chunks: list[tuple[np.ndarray, ...]] = []
        self._buf = bytearray()
        #: append one packed record (``pack(...)``): the buffer's own ``extend``, stable
        #: for the trace's life
        self.put = self._buf.extend
        self.nodes: list[str] = []
        self._node_ix: dict[str, int] = {}
        self.texts: list[str] = []
        self._text_ix: dict[str, int] = {}

    def emit(self, event: tuple) -> None:
        """Append one event given as the ten-tuple of its fields."""
        self._buf.extend(pack(*event))

    def buffered(self) -> int:
        """Events recorded since the last ``compact()``."""
        return len(self._buf) // RECORD.size

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
        self._buf.extend(pack(time, kind, node, job, attempt, a, b, c, x, text))

    def compact(self, threshold: int = _CHUNK) -> None:
        """Move buffered events into typed columns once there are ``threshold`` of them."""
        n = len(self._buf) // RECORD.size
        if n < threshold or n == 0:
            return
        records = np.frombuffer(self._buf, dtype=_RECORD_DTYPE, count=n)
        self._chunks.append(tuple(records[name].copy() for name in COLUMNS))
        del records  # the view must go before the buffer can shrink
        del self._buf[:]

    def __len__(self) -> int:
        return sum(len(ch[0]) for ch in self._chunks) + len(self._buf) // RECORD.size

    def arrays(self) -> dict[str, np.ndarray]:
        """The columns as numpy arrays (little-endian, the dtypes of ``_DTYPES``); shared,
        not copies: do not modify them."""
        self.compact(threshold=1)
        if not self._chunks:
            return {name: np.zeros(0, dtype=dt) for name, dt in zip(COLUMNS, _DTYPES)}
        if len(self._chunks) > 1:
            merged = tuple(np.concatenate([ch[i] for ch in self._chunks])
                           for i in range(len(COLUMNS)))
            self._chunks = [merged]
        return {name: col for name, col in zip(COLUMNS, self._chunks[0])}

    @classmethod
    def from_arrays(cls, cols: dict[str, np.ndarray], nodes: list[str],
                    texts: list[str]) -> "Trace":
        """A trace of the given columns (each cast to its dtype) and name tables: a trace
        read back from its file (``output.view.load``)."""
        trace = cls()
        trace._chunks = [tuple(np.ascontiguousarray(cols[name], dtype=dt)
                               for name, dt in zip(COLUMNS, _DTYPES))]
        for n in nodes:
            trace.node(n)
        for t in texts:
            trace.text(t)
        return trace

    def sha256(self) -> str:
        """A hash of the trace that is the same on every machine."""
        cols = self.arrays()
        used = int(cols["kind"].max()) + 1 if len(cols["kind"]) else 0
        kinds = KIND_NAMES[:max(HASHED_KINDS, used)]
        h = hashlib.sha256()
        h.update(("|".join(COLUMNS) + "\n" + "|".join(kinds) + "\n").encode())
        h.update(("\x1f".join(self.nodes) + "\n").encode())
        h.update(("\x1f".join(self.texts) + "\n").encode())
        for name, col in cols.items():  # the column's own bytes, not a copy of them
            h.update(memoryview(np.ascontiguousarray(col)).cast("B"))
        return h.hexdigest()
