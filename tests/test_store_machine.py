"""A stateful property test of the jobs table: three nodes claim, complete, fail, crash and
race over one ``Store`` while time moves forward, and a plain model checks every step.

The model is what the nodes *believe* (the ids each thinks it holds) and what the table must
hold (each row's lock as the model granted it, the ids inserted and the ids completed). It
never asks the store's indexes anything: eligibility and the acquisition order are
recomputed by brute force over ``store.rows``, with the aging score done in exact fractions.

Invariants held after every step:

(a) no job is held by two nodes under a valid lock — every lock granted overwrote nothing or
    an expired lock (``previous_valid`` is False), the table's lock is the last one the model
    granted, and at most one node both believes it holds a row and holds its valid lock;
(b) no job is lost — every inserted id is in ``store.rows`` or was deleted by a completion
    (an id may be reused for a new row once its job is complete);
(c) a row's version never decreases (and every write the model makes bumps it by one);
(d) ``store.count(table)`` is the number of rows in that table;
(e) claims and selects return exactly the first ``n`` eligible rows in the order key.

Times are multiples of 0.5 (exact in binary), so ``now == lock_until`` and ``now == due`` are
hit often; ``expire`` lands either exactly on the last ``lock_until`` or just after it.
"""

from __future__ import annotations

import math
from fractions import Fraction

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule)

from jobsim.database.store import ACQUIRABLE, DEADLETTER, JOB, ORDERS, TABLES, Row, Store

NODES = ("n1", "n2", "n3")
nodes = st.sampled_from(NODES)
halves = st.integers(0, 10).map(lambda k: k / 2)           # 0, 0.5, …, 5
steps = st.integers(1, 6).map(lambda k: k / 2)             # 0.5 … 3
lock_times = st.integers(1, 8).map(lambda k: k / 2)        # 0.5 … 4
batch = st.integers(1, 5)
pick = st.integers(0, 1_000)                               # index into a list of choices
jobs = st.lists(st.tuples(halves, st.integers(0, 3), st.integers(1, 3)), min_size=1,
                max_size=4)                                # (due_in, priority, retries)

UNLOCKED = (None, -math.inf)


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.store = Store()
        self.now = 0.0
        self.next_id = 1
        self.inserted: set[int] = set()
        self.completed: set[int] = set()
        self.beliefs: dict[str, set[int]] = {n: set() for n in NODES}
        self.grants: dict[int, tuple[str, float]] = {}     # id -> (owner, lock_until)
        self.versions: dict[int, int] = {}                 # last version seen per id

    # --- the brute-force reference ------------------------------------------------------------

    def eligible_now(self, r: Row) -> bool:
        unlocked = r.locked_by is None or r.lock_until < self.now
        return r.table == JOB and r.due <= self.now and unlocked

    def rank(self, r: Row) -> tuple:
        order = self.store.order
        if order == "id":
            return (r.id,)
        if order == "due":
            return (r.due, r.id)
        if order == "created":
            return (r.created, r.id)
        if order == "priority":
            return (-r.priority, r.due, r.id)
        # aging: highest priority + rate × age first, exactly; the age counts from the due
        # time (Store's default aging_from)
        age = Fraction(self.now) - Fraction(r.due)
        score = Fraction(r.priority) + Fraction(self.store.aging_rate) * age
        return (-score, r.due, r.id)

    def expected(self, n: int) -> list[int]:
        rows = [r for r in self.store.rows.values() if self.eligible_now(r)]
        return [r.id for r in sorted(rows, key=self.rank)][:n]

    def expected_next(self) -> float | None:
        best = None
        for r in self.store.rows.values():
            if r.table != JOB:
                continue
            if self.eligible_now(r):
                return self.now
            if r.locked_by is not None and r.lock_until >= r.due:
                at = math.nextafter(r.lock_until, math.inf)   # valid while lock_until >= now
            else:
                at = r.due
            best = at if best is None else min(best, at)
        return best

    def snapshot(self) -> dict[int, tuple]:
        return {rid: (r.table, r.locked_by, r.lock_until, r.due, r.retries, r.version)
                for rid, r in self.store.rows.items()}

    # --- granting, as the model sees it -------------------------------------------------------

    def granted(self, node: str, rid: int, lock_until: float, before: tuple) -> None:
        """Record that ``node`` now holds ``rid``; refuse a grant over another valid hold."""
        prev = self.grants.get(rid)
        assert prev is None or prev[0] == node or prev[1] < self.now, (
            f"double acquisition: row {rid} granted to {node} at {self.now} while "
            f"{prev[0]} held it until {prev[1]}")
        r = self.store.rows[rid]
        assert (r.locked_by, r.lock_until) == (node, lock_until)
        assert r.version == before[5] + 1, f"row {rid}: a lock must bump the version once"
        self.grants[rid] = (node, lock_until)
        self.beliefs[node].add(rid)

    def checked_claim(self, node: str, n: int, lock_time: float) -> None:
        before = self.snapshot()
        want = self.expected(n)
        until = self.now + lock_time
        got = self.store.claim(node, self.now, n, until)
        assert [lk.id for lk in got] == want, (
            f"claim({node}, now={self.now}, n={n}) took {[lk.id for lk in got]}, "
            f"brute force says {want} (order={self.store.order})")
        for lk in got:
            _, owner, lock_until, *_ = before[lk.id]
            assert lk.previous_valid is False
            assert owner is None or lock_until < self.now, f"claimed a valid lock: {lk}"
            assert lk.previous_owner == owner and lk.lock_until == until
            self.granted(node, lk.id, until, before[lk.id])
        after = self.snapshot()
        assert {k: v for k, v in after.items() if k not in want} == \
            {k: v for k, v in before.items() if k not in want}, "claim touched other rows"

    # --- rules -------------------------------------------------------------------------------

    def believers(self) -> list[str]:
        return [n for n in NODES if self.beliefs[n]]

    def believed(self, k: int, j: int) -> tuple[str, int]:
        """The ``k``-th node that believes it holds something, and the ``j``-th id it holds."""
        believers = self.believers()
        node = believers[k % len(believers)]
        held = sorted(self.beliefs[node])
        return node, held[j % len(held)]

    @initialize(order=st.sampled_from(ORDERS), rate=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
                first=st.lists(st.tuples(halves, st.integers(0, 3), st.integers(1, 3)),
                               max_size=8))
    def start(self, order: str, rate: float, first: list) -> None:
        self.store = Store(order=order, aging_rate=rate)
        self.add_jobs(first)

    @rule(new=jobs)
    def insert(self, new: list[tuple[float, int, int]]) -> None:
        """Clients insert jobs, due now or a little later, with fresh ids."""
        self.add_jobs(new)

    def add_jobs(self, new: list[tuple[float, int, int]]) -> None:
        for due_in, priority, retries in new:
            rid = self.next_id
            self.next_id += 1
            self.store.insert(Row(rid, "async", "h", priority, self.now, self.now + due_in,
                                  retries))
            self.inserted.add(rid)
            assert self.store.rows[rid].version == 0

    @precondition(lambda self: self.completed)
    @rule(k=pick, due_in=halves, priority=st.integers(0, 3))
    def reuse_id(self, k: int, due_in: float, priority: int) -> None:
        """A client inserts a new row under the id of a completed one: it starts afresh at
        version 0 and must not inherit anything from the index entries of its namesake."""
        rid = sorted(self.completed)[k % len(self.completed)]
        self.completed.discard(rid)
        self.store.insert(Row(rid, "async", "h", priority, self.now, self.now + due_in, 2))
        assert self.store.rows[rid].version == 0

    @rule(dt=steps)
    def advance(self, dt: float) -> None:
        self.now += dt

    @rule(past=st.booleans())
    def expire(self, past: bool) -> None:
        """Jump to the last ``lock_until`` in the table — exactly onto it (locks still valid)
        or just past it (every lock expired)."""
        untils = [r.lock_until for r in self.store.rows.values() if r.locked_by is not None]
        if untils:
            at = max(untils)
            if past:
                at = math.nextafter(at, math.inf)
            self.now = max(self.now, at)
        if past:
            assert not any(r.lock_valid(self.now) for r in self.store.rows.values())

    @rule(node=nodes, n=batch, lock_time=lock_times)
    def claim(self, node: str, n: int, lock_time: float) -> None:
        self.checked_claim(node, n, lock_time)

    @precondition(believers)
    @rule(k=pick, j=pick)
    def complete(self, k: int, j: int) -> None:
        """A node finishes a job it believes it holds: ``DELETE … AND locked_by = me``."""
        node, rid = self.believed(k, j)
        r = self.store.get(rid)
        ok = r is not None and r.table in ACQUIRABLE and r.locked_by == node
        assert self.store.delete(rid, owner=node) is ok
        self.beliefs[node].discard(rid)
        if ok:
            self.completed.add(rid)
            self.grants.pop(rid, None)
            self.versions.pop(rid, None)
            assert self.store.get(rid) is None

    @precondition(believers)
    @rule(k=pick, j=pick, delay=halves)
    def fail(self, k: int, j: int, delay: float) -> None:
        """A node's job failed: reschedule with one retry fewer, or dead-letter it when it
        was on its last retry — both guarded by owner."""
        node, rid = self.believed(k, j)
        before = self.snapshot()
        r = self.store.get(rid)
        ok = r is not None and r.table in ACQUIRABLE and r.locked_by == node
        dead = r is not None and r.retries <= 1
        if dead:
            done = self.store.move(rid, DEADLETTER, error="boom", owner=node, retries=0)
        else:
            done = self.store.reschedule(rid, self.now + delay,
                                         (r.retries - 1) if r else 0, "boom", owner=node)
        assert done is ok
        self.beliefs[node].discard(rid)
        if not ok:
            assert self.snapshot() == before
            return
        self.grants.pop(rid, None)
        table, locked_by, lock_until, due, retries, version = before[rid]
        after = self.snapshot()[rid]
        if dead:
            assert after == (DEADLETTER, None, -math.inf, due, 0, version + 1)
        else:
            assert after == (JOB, None, -math.inf, self.now + delay, retries - 1, version + 1)

    @precondition(lambda self: self.store.count(DEADLETTER) > 0)
    @rule(k=pick)
    def revive(self, k: int) -> None:
        """An operator moves a dead letter back to ``job`` with fresh retries."""
        dead = sorted(rid for rid, r in self.store.rows.items() if r.table == DEADLETTER)
        rid = dead[k % len(dead)]
        v = self.store.rows[rid].version
        assert self.store.move(rid, JOB, retries=3) is True
        assert self.store.rows[rid].version == v + 1

    @precondition(believers)
    @rule(k=pick, lock_time=lock_times)
    def heartbeat(self, k: int, lock_time: float) -> None:
        """A node extends the locks it believes it holds; only rows it still owns move."""
        believers = self.believers()
        node = believers[k % len(believers)]
        held = sorted(self.beliefs[node])
        before = self.snapshot()
        want = [rid for rid in held if rid in before and before[rid][1] == node
                and before[rid][0] in ACQUIRABLE]
        until = self.now + lock_time
        assert self.store.extend(held, node, until) == want
        for rid in want:
            r = self.store.rows[rid]
            assert (r.locked_by, r.lock_until, r.version) == (node, until, before[rid][5] + 1)
            self.grants[rid] = (node, until)

    @precondition(believers)
    @rule(k=pick)
    def crash(self, k: int) -> None:
        """A node dies: it forgets what it held; its locks stay in the table to expire."""
        believers = self.believers()
        self.beliefs[believers[k % len(believers)]].clear()

    @rule(node=nodes, n=batch, lock_time=lock_times, rival=st.sampled_from((None,) + NODES),
          rival_n=batch, gap=st.sampled_from([0.0, 0.5]))
    def optimistic_claim(self, node: str, n: int, lock_time: float, rival: str | None,
                         rival_n: int, gap: float) -> None:
        """SELECT ids and versions, then (maybe after another node's claim and some time)
        one ``UPDATE … WHERE id = ? AND version = ?`` per row: a row whose version moved is
        a lost race, never a double acquisition."""
        before = self.snapshot()
        want = self.expected(n)
        seen = self.store.select(self.now, n)
        assert [rid for rid, _ in seen] == want
        assert [v for _, v in seen] == [before[rid][5] for rid in want]
        assert self.store.select(self.now, n) == seen, "two selects disagree"
        assert self.snapshot() == before, "select wrote something"
        if rival is not None and rival != node:
            self.checked_claim(rival, rival_n, lock_time)
        self.now += gap
        until = self.now + lock_time
        for rid, version in seen:
            pre = self.snapshot()
            r = self.store.get(rid)
            ok = r is not None and r.table == JOB and r.version == version
            got = self.store.lock([rid], node, self.now, until, guard=False,
                                  versions={rid: version})
            assert len(got) == int(ok)
            if ok:
                assert got[0].previous_valid is False, f"optimistic lock overwrote {got[0]}"
                self.granted(node, rid, until, pre[rid])
            else:
                assert self.snapshot() == pre

    @rule(n=st.integers(0, 8))
    def poll(self, n: int) -> None:
        """An idle node looks: ``select`` and ``next_eligible`` against brute force."""
        before = self.snapshot()
        assert [rid for rid, _ in self.store.select(self.now, n)] == self.expected(n)
        assert self.store.next_eligible(self.now) == self.expected_next()
        assert self.snapshot() == before

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def no_double_hold(self) -> None:
        for rid, r in self.store.rows.items():
            assert (r.locked_by, r.lock_until) == self.grants.get(rid, UNLOCKED), (
                f"row {rid} lock {(r.locked_by, r.lock_until)} is not the one granted "
                f"{self.grants.get(rid, UNLOCKED)}")
            holders = [n for n in NODES if rid in self.beliefs[n]
                       and r.locked_by == n and r.lock_until >= self.now]
            assert len(holders) <= 1, f"row {rid} held by {holders} at {self.now}"
        assert not set(self.grants) - set(self.store.rows)

    @invariant()
    def no_job_lost(self) -> None:
        present = set(self.store.rows)
        assert not present & self.completed
        assert present | self.completed == self.inserted, (
            f"lost: {self.inserted - present - self.completed}")

    @invariant()
    def versions_never_decrease(self) -> None:
        for rid, r in self.store.rows.items():
            assert r.version >= self.versions.get(rid, 0), f"row {rid} version went down"
            self.versions[rid] = r.version

    @invariant()
    def counts_match(self) -> None:
        for t in TABLES:
            assert self.store.count(t) == sum(r.table == t for r in self.store.rows.values()), t


StoreMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40,
                                          deadline=None)
TestStoreMachine = StoreMachine.TestCase
