"""Unit tests of the jobs-table model (``jobsim.database.store``).

Each test's docstring states the one piece of statement semantics it holds. Times are small
binary fractions so every comparison is exact, and the boundary ``now == lock_until`` can be
hit on the nose. Within a test, ``now`` never goes backwards: the store is told the instant
of each statement by the database, which applies statements in time order, and its ready
index relies on that.
"""

from __future__ import annotations

import math

import pytest

from jobsim.database.store import (ACQUIRABLE, DEADLETTER, JOB, SUSPENDED, TABLES, TIMER, Locked, Row,
                          Store)


def row(rid: int, due: float = 0.0, priority: int = 0, created: float = 0.0,
        retries: int = 3) -> Row:
    return Row(rid, "async", "h", priority, created, due, retries)


def store_with(*rows: Row, order: str = "id", aging_rate: float = 0.0,
               aging_from: str = "due") -> Store:
    s = Store(order=order, aging_rate=aging_rate, aging_from=aging_from)
    for r in rows:
        s.insert(r)
    return s


def ids(locked: list[Locked]) -> list[int]:
    return [lk.id for lk in locked]


# --- construction and insert -------------------------------------------------------------------


def test_unknown_order_is_refused():
    """The ORDER BY must be one of ``ORDERS``; anything else is a ValueError at construction."""
    with pytest.raises(ValueError, match="order must be one of"):
        Store(order="random")


def test_insert_sets_table_unlocked_version_zero_and_refuses_duplicates():
    """An INSERT puts the row in its table unlocked (``lock_until = -inf``) at version 0; a
    second row with an id already present is a ValueError and changes nothing."""
    s = Store()
    r = row(7)
    s.insert(r)
    assert (r.table, r.locked_by, r.lock_until, r.version) == (JOB, None, -math.inf, 0)
    with pytest.raises(ValueError, match="duplicate job id 7"):
        s.insert(row(7))
    assert s.count(JOB) == 1
    assert s.get(7) is r


def test_insert_already_locked_hint_path():
    """An insert with ``owner`` arrives locked (Flowable's hint path): no one else may claim it
    until the lock expires, i.e. until ``now > lock_until``."""
    s = Store()
    s.insert(row(1), owner="n1", lock_until=5.0)
    assert s.claim("n2", 5.0, 10, 9.0) == []
    got = s.claim("n2", 5.5, 10, 9.0)
    assert got == [Locked(1, "n1", False, 9.0, "h", "async", 2)]


# --- claim: which rows, in which order ---------------------------------------------------------


def test_claim_takes_at_most_n_due_unlocked_rows_in_id_order():
    """``claim`` locks at most ``n`` rows that are due (``due <= now``) and unlocked, in id
    order by default; rows due later are left alone."""
    s = store_with(row(5, due=0.0), row(2, due=1.0), row(9, due=3.0), row(1, due=0.5),
                   row(4, due=1.0))
    got = s.claim("n1", 1.0, 3, 11.0)
    assert ids(got) == [1, 2, 4]
    assert all(lk.previous_owner is None and lk.previous_valid is False for lk in got)
    assert all(lk.lock_until == 11.0 for lk in got)
    assert [(r.locked_by, r.lock_until, r.version) for r in (s.get(1), s.get(2), s.get(4))] \
        == [("n1", 11.0, 1)] * 3
    # the rest: 5 is due but beyond n, 9 is not due yet
    assert ids(s.claim("n2", 1.0, 3, 11.0)) == [5]
    assert s.claim("n3", 1.0, 3, 11.0) == []


def test_claim_with_n_zero_or_nothing_due_locks_nothing():
    """``LIMIT 0`` locks nothing; so does a table whose rows are all due in the future."""
    s = store_with(row(1, due=2.0))
    assert s.claim("n1", 1.5, 5, 5.0) == []
    assert s.claim("n1", 2.0, 0, 5.0) == []
    assert s.get(1).version == 0 and s.get(1).locked_by is None


def test_order_due_is_earliest_due_first_then_id():
    """``order='due'``: earliest due first; equal due dates fall back to id order."""
    s = store_with(row(1, due=3.0), row(2, due=1.0), row(3, due=2.0), row(4, due=1.0),
                   order="due")
    assert ids(s.claim("n1", 3.0, 10, 9.0)) == [2, 4, 3, 1]


def test_order_created_is_oldest_first():
    """``order='created'``: the oldest row first, whatever its id or due date."""
    s = store_with(row(1, created=2.0), row(2, created=0.5), row(3, created=1.0),
                   order="created")
    assert ids(s.claim("n1", 3.0, 10, 9.0)) == [2, 3, 1]


def test_order_priority_is_highest_first_then_due():
    """``order='priority'``: highest priority first; within a priority, earliest due first."""
    s = store_with(row(1, priority=1, due=0.0), row(2, priority=5, due=2.0),
                   row(3, priority=5, due=1.0), row(4, priority=0, due=0.0),
                   order="priority")
    assert ids(s.claim("n1", 2.0, 10, 9.0)) == [3, 2, 1, 4]


def test_order_aging_is_static_key_priority_minus_rate_times_created():
    """``order='aging'`` with ``aging_from='created'`` ranks by ``priority + rate × age``,
    kept as the static key ``priority − rate × created``: with rate 1, a priority-0 row
    created at 0 (key 0) beats a priority-2 row created at 3 (key −1) and ties with a
    priority-1 row created at 1 (key 0), the tie going to the earlier due date."""
    s = store_with(row(1, priority=2, created=3.0, due=3.0),
                   row(2, priority=0, created=0.0, due=2.0),
                   row(3, priority=1, created=1.0, due=1.0),
                   order="aging", aging_rate=1.0, aging_from="created")
    assert ids(s.claim("n1", 3.0, 10, 9.0)) == [3, 2, 1]


def test_order_aging_counts_from_the_due_time_by_default():
    """By default the age counts from the due time, the key ``priority − rate × due``: the
    same rows rank 3 (key 0), 1 (key −1), 2 (key −2) — row 2 earns nothing for the two
    seconds it was not yet due."""
    s = store_with(row(1, priority=2, created=3.0, due=3.0),
                   row(2, priority=0, created=0.0, due=2.0),
                   row(3, priority=1, created=1.0, due=1.0),
                   order="aging", aging_rate=1.0)
    assert ids(s.claim("n1", 3.0, 10, 9.0)) == [3, 1, 2]


def test_aging_with_rate_zero_is_priority_order():
    """With ``aging_rate = 0`` the aging key degenerates to plain priority, then due."""
    s = store_with(row(1, priority=1, created=0.0, due=1.0),
                   row(2, priority=3, created=2.0, due=2.0),
                   row(3, priority=1, created=1.0, due=0.0),
                   order="aging", aging_rate=0.0)
    assert ids(s.claim("n1", 2.0, 10, 9.0)) == [2, 3, 1]


# --- lock expiry ------------------------------------------------------------------------------


def test_lock_is_still_valid_at_lock_until_and_expired_only_after():
    """A lock is expired only when ``lock_until < now``: at ``now == lock_until`` it is still
    valid, so the row is neither eligible nor claimable; one instant later it is both."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 4.0)
    r = s.get(1)
    assert r.lock_valid(4.0) is True
    assert r.eligible(4.0) is False
    assert s.select(4.0, 5) == []
    assert s.claim("n2", 4.0, 5, 8.0) == []
    after = math.nextafter(4.0, math.inf)
    assert r.lock_valid(after) is False
    assert r.eligible(after) is True
    assert s.claim("n2", after, 5, 8.0) == [Locked(1, "n1", False, 8.0, "h", "async", 2)]
    assert (r.locked_by, r.lock_until, r.version) == ("n2", 8.0, 2)


def test_claim_never_returns_a_row_whose_lock_is_valid():
    """``claim`` is the guarded UPDATE: a row under a valid lock is skipped even when it is
    first in order; the next eligible rows are taken instead."""
    s = store_with(row(1), row(2), row(3))
    s.claim("n1", 0.0, 1, 10.0)                       # n1 holds 1 until 10
    got = s.claim("n2", 5.0, 5, 15.0)
    assert ids(got) == [2, 3]
    assert s.get(1).locked_by == "n1" and s.get(1).lock_until == 10.0


def test_expired_lock_is_reclaimed_and_reports_previous_owner_not_valid():
    """Claiming a row whose lock expired reports who held it (``previous_owner``) and that the
    lock was no longer valid (``previous_valid=False``): a takeover, not a double hold."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 2.0)
    assert s.claim("n2", 3.0, 1, 6.0) == [Locked(1, "n1", False, 6.0, "h", "async", 2)]


# --- lock: the by-id UPDATE (read-then-write and optimistic strategies) -----------------------


def test_unguarded_lock_overwrites_a_valid_lock_and_reports_it():
    """``lock(guard=False)`` is ``UPDATE … WHERE id IN (ids)`` with no guard: it overwrites
    another owner's valid lock and reports ``previous_valid=True`` — a double acquisition."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 10.0)
    got = s.lock([1], "n2", 5.0, 15.0, guard=False)
    assert got == [Locked(1, "n1", True, 15.0, "h", "async", 2)]
    assert (s.get(1).locked_by, s.get(1).lock_until, s.get(1).version) == ("n2", 15.0, 2)


def test_unguarded_relock_by_the_same_owner_is_not_a_double_hold():
    """Re-locking one's own valid lock is not reported as overwriting a valid lock."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 10.0)
    assert s.lock([1], "n1", 5.0, 15.0, guard=False) == [
        Locked(1, "n1", False, 15.0, "h", "async", 2)]


def test_guarded_lock_skips_rows_under_a_valid_lock_or_not_due():
    """``lock(guard=True)`` re-checks the acquisition guard per row: rows under a valid lock
    or not yet due are skipped, the others locked, in the order of ``ids``."""
    s = store_with(row(1), row(2, due=9.0), row(3))
    s.claim("n1", 0.0, 1, 10.0)
    got = s.lock([3, 2, 1], "n2", 5.0, 15.0)
    assert got == [Locked(3, None, False, 15.0, "h", "async", 1)]
    assert s.get(1).locked_by == "n1" and s.get(2).locked_by is None


def test_lock_skips_missing_and_moved_rows():
    """``lock`` skips ids that are gone or in another table (``table`` names the one
    updated)."""
    s = store_with(row(1), row(2))
    s.delete(1)
    s.move(2, DEADLETTER, error="boom")
    assert s.lock([1, 2, 3], "n1", 0.0, 5.0, guard=False) == []


def test_lock_with_versions_skips_rows_whose_version_moved():
    """The optimistic UPDATE: ``lock(versions=…)`` locks a row only if its version is still
    the one read; a row another node wrote in between is skipped (a lost race, never a double
    hold), even without the guard."""
    s = store_with(row(1), row(2))
    seen = s.select(0.0, 2)
    assert seen == [(1, 0), (2, 0)]
    s.claim("n2", 0.0, 1, 10.0)                       # n2 wins row 1: version 0 -> 1
    got = s.lock([1, 2], "n1", 0.0, 10.0, guard=False, versions=dict(seen))
    assert got == [Locked(2, None, False, 10.0, "h", "async", 1)]
    assert s.get(1).locked_by == "n2" and s.get(1).version == 1
    assert s.get(2).locked_by == "n1" and s.get(2).version == 1


# --- versions --------------------------------------------------------------------------------


def test_version_strictly_increases_on_every_write():
    """Every write to a row — claim, lock, extend, unlock, reschedule, move, move back —
    bumps its version by one; reads never do."""
    s = store_with(row(1))
    r = s.get(1)
    seen = [r.version]

    def wrote(ok) -> None:
        assert ok
        seen.append(r.version)

    wrote(s.claim("n1", 0.0, 1, 5.0))
    wrote(s.extend([1], "n1", 7.0) == [1])
    wrote(s.lock([1], "n2", 1.0, 8.0, guard=False))
    wrote(s.unlock(1, owner="n2"))
    wrote(s.lock([1], "n3", 1.0, 9.0))
    wrote(s.reschedule(1, 2.0, 2, "err", owner="n3"))
    wrote(s.move(1, DEADLETTER, error="dead"))
    wrote(s.move(1, JOB, retries=3))
    s.select(5.0, 5)
    s.next_eligible(5.0)
    assert seen == list(range(9))
    assert r.version == 8


def test_refused_writes_leave_the_version_alone():
    """A write whose WHERE clause matches nothing (wrong owner, guard fails) changes
    nothing, version included."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 5.0)
    assert s.extend([1], "n2", 9.0) == []
    assert s.unlock(1, owner="n2") is False
    assert s.lock([1], "n2", 1.0, 9.0) == []
    assert s.delete(1, owner="n2") is False
    assert s.reschedule(1, 3.0, 2, "e", owner="n2") is False
    assert s.move(1, DEADLETTER, owner="n2") is False
    r = s.get(1)
    assert (r.version, r.locked_by, r.lock_until, r.table) == (1, "n1", 5.0, JOB)


# --- select -----------------------------------------------------------------------------------


def test_select_changes_nothing():
    """``select`` is a read: two selects at the same instant give the same ``(id, version)``
    list, no row is locked or re-versioned, and a claim afterwards takes the same rows."""
    s = store_with(row(3, due=1.0), row(1, due=0.0), row(2, due=5.0), row(4, due=0.5))
    s.claim("n1", 0.0, 1, 0.5)                        # row 1: version 1, expires after 0.5
    first = s.select(1.0, 10)
    second = s.select(1.0, 10)
    assert first == second == [(1, 1), (3, 0), (4, 0)]
    assert [s.get(i).version for i in (1, 2, 3, 4)] == [1, 0, 0, 0]
    assert [s.get(i).locked_by for i in (1, 2, 3, 4)] == ["n1", None, None, None]
    assert ids(s.claim("n2", 1.0, 10, 9.0)) == [1, 3, 4]


def test_select_limit_is_a_prefix():
    """``select(now, n)`` is the first ``n`` of the full eligible list, in order."""
    s = store_with(*(row(i, due=float(i % 3)) for i in range(1, 9)), order="due")
    full = s.select(2.0, 100)
    assert [rid for rid, _ in full] == [3, 6, 1, 4, 7, 2, 5, 8]
    for n in range(0, 10):
        assert s.select(2.0, n) == full[:n]


# --- next_eligible ----------------------------------------------------------------------------


def test_next_eligible_of_an_empty_table_is_none():
    """With nothing acquirable in the table, ``next_eligible`` is ``None``."""
    s = Store()
    assert s.next_eligible(0.0) is None
    assert s.next_eligible(0.0, TIMER) is None


def test_next_eligible_is_now_when_a_row_is_eligible():
    """If some row is due and unlocked, the answer is ``now`` itself."""
    s = store_with(row(1, due=1.0), row(2, due=4.0))
    assert s.next_eligible(2.5) == 2.5


def test_next_eligible_is_the_due_time_of_a_future_row():
    """If nothing is eligible, the answer is the earliest due date among unlocked rows
    (a due date is inclusive: eligible at exactly ``due``)."""
    s = store_with(row(1, due=6.0), row(2, due=4.0))
    assert s.next_eligible(1.0) == 4.0
    assert s.next_eligible(4.0) == 4.0
    assert ids(s.claim("n1", 4.0, 5, 9.0)) == [2]


def test_next_eligible_of_a_locked_row_is_just_after_lock_until():
    """A locked row becomes eligible only once ``lock_until < now``: the answer is the next
    float after ``lock_until``, and at that instant the row is indeed claimable."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 3.0)
    at = s.next_eligible(1.0)
    assert at == math.nextafter(3.0, math.inf)
    assert s.next_eligible(3.0) == at
    assert s.claim("n2", 3.0, 1, 9.0) == []
    assert ids(s.claim("n2", at, 1, 9.0)) == [1]


def test_next_eligible_of_a_row_locked_past_its_due_is_its_due():
    """A row locked by a lock that ends before its due date becomes eligible at ``due``."""
    s = Store()
    s.insert(row(1, due=5.0), owner="n1", lock_until=2.0)
    assert s.next_eligible(0.0) == 5.0


def test_next_eligible_ignores_rows_out_of_acquisition():
    """Deleted and dead-lettered rows do not count; the earliest remaining one does."""
    s = store_with(row(1, due=1.0), row(2, due=2.0), row(3, due=7.0))
    s.delete(1)
    s.move(2, DEADLETTER, error="x")
    assert s.next_eligible(0.0) == 7.0
    s.delete(3)
    assert s.next_eligible(0.0) is None


# --- delete / extend / unlock ------------------------------------------------------------------


def test_delete_with_owner_refuses_a_row_held_by_another_owner():
    """``DELETE … AND locked_by = owner``: a node cannot complete a job another node now
    holds (its own lock expired and was taken over); the row stays."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 2.0)
    s.claim("n2", 3.0, 1, 6.0)
    assert s.delete(1, owner="n1") is False
    assert s.get(1).locked_by == "n2" and s.count(JOB) == 1
    assert s.delete(1, owner="n2") is True
    assert s.get(1) is None and s.count(JOB) == 0
    assert s.delete(1, owner="n2") is False


def test_delete_without_owner_removes_any_acquirable_row_but_not_dead_letters():
    """An unguarded DELETE removes the row whoever holds it; rows in ``deadletter_job`` are
    not deleted by it (a completion cannot remove a dead letter)."""
    s = store_with(row(1), row(2))
    s.claim("n1", 0.0, 1, 5.0)
    assert s.delete(1) is True
    s.move(2, DEADLETTER, error="x")
    assert s.delete(2) is False
    assert (s.count(JOB), s.count(DEADLETTER)) == (0, 1)


def test_extend_only_renews_the_owners_locks():
    """The heartbeat ``UPDATE … SET lock_until WHERE locked_by = owner`` renews the caller's
    rows only, and the renewed lock keeps others out until the new ``lock_until``."""
    s = store_with(row(1), row(2))
    s.claim("n1", 0.0, 1, 2.0)
    s.claim("n2", 0.0, 1, 2.0)
    assert s.extend([1, 2, 3], "n1", 6.0) == [1]
    assert s.get(1).lock_until == 6.0 and s.get(2).lock_until == 2.0
    assert ids(s.claim("n3", 4.0, 5, 9.0)) == [2]
    assert s.next_eligible(4.0) == math.nextafter(6.0, math.inf)


def test_unlock_clears_the_lock_and_makes_the_row_eligible_again():
    """``unlock`` (guarded by owner when given) clears ``locked_by`` and ``lock_until``; the
    row is claimable at once."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 9.0)
    assert s.unlock(1, owner="n2") is False
    assert s.unlock(1, owner="n1") is True
    r = s.get(1)
    assert (r.locked_by, r.lock_until) == (None, -math.inf)
    assert s.unlock(1) is False                       # nothing left to unlock
    assert ids(s.claim("n2", 0.0, 1, 9.0)) == [1]


# --- reschedule and move ---------------------------------------------------------------------


def test_reschedule_unlocks_sets_due_and_retries_and_counts_a_failure():
    """A failure with retries left: the row is unlocked, gets its new due date, retries and
    error, ``failures`` goes up by one, and it is claimable again from ``due`` on."""
    s = store_with(row(1, retries=3))
    s.claim("n1", 0.0, 1, 9.0)
    assert s.reschedule(1, 4.0, 2, "timeout", owner="n1") is True
    r = s.get(1)
    assert (r.table, r.locked_by, r.lock_until, r.due, r.retries, r.error, r.failures,
            r.version) == (JOB, None, -math.inf, 4.0, 2, "timeout", 1, 2)
    assert s.claim("n2", 3.5, 1, 9.0) == []
    assert s.next_eligible(3.5) == 4.0
    assert s.claim("n2", 4.0, 1, 9.0) == [Locked(1, None, False, 9.0, "h", "async", 2)]


def test_reschedule_with_owner_refuses_another_owners_row():
    """A node whose lock was taken over cannot reschedule the job it no longer holds."""
    s = store_with(row(1))
    s.claim("n1", 0.0, 1, 1.0)
    s.claim("n2", 2.0, 1, 9.0)
    assert s.reschedule(1, 5.0, 2, "e", owner="n1") is False
    r = s.get(1)
    assert (r.locked_by, r.due, r.failures) == ("n2", 0.0, 0)


def test_move_to_deadletter_takes_the_row_out_of_acquisition():
    """``move(…, 'deadletter_job')`` unlocks the row, records the error as a failure and
    takes it out of every acquisition statement: claim, select, lock and next_eligible no
    longer see it; moving it back to ``job`` makes it acquirable again."""
    s = store_with(row(1, retries=1), row(2, due=3.0))
    s.claim("n1", 0.0, 1, 9.0)
    assert s.move(1, DEADLETTER, error="gave up", owner="n1", retries=0) is True
    r = s.get(1)
    assert (r.table, r.locked_by, r.error, r.failures, r.retries) == \
        (DEADLETTER, None, "gave up", 1, 0)
    assert s.next_eligible(1.0) == 3.0
    assert s.select(10.0, 5) == [(2, 0)]
    assert s.lock([1], "n2", 10.0, 20.0, guard=False) == []
    assert ids(s.claim("n2", 10.0, 5, 20.0)) == [2]
    assert s.claim("n3", 10.0, 5, 20.0) == []
    assert s.move(1, DEADLETTER) is False             # already there
    assert s.move(1, JOB, retries=3) is True
    assert ids(s.claim("n3", 10.0, 5, 20.0)) == [1]


def test_timer_table_is_acquired_separately():
    """Each acquirable table has its own queue: a timer row is invisible to ``job`` claims
    and claimed with ``table='timer_job'``; moving it to ``job`` hands it over."""
    s = Store()
    s.insert(row(1), TIMER)
    s.insert(row(2), JOB)
    assert [rid for rid, _ in s.select(0.0, 5)] == [2]
    assert s.select(0.0, 5, TIMER) == [(1, 0)]
    assert s.move(1, JOB) is True
    assert ids(s.claim("n1", 0.0, 5, 9.0)) == [1, 2]
    assert s.next_eligible(0.0, TIMER) is None


# --- counts -----------------------------------------------------------------------------------


def test_count_per_table_follows_every_insert_delete_reschedule_and_move():
    """``count(table)`` is always the number of rows in that table: inserts add, deletes
    remove, moves and reschedules carry a row from one table to another."""
    s = Store()

    def counts() -> dict[str, int]:
        assert {t: s.count(t) for t in TABLES} == \
            {t: sum(r.table == t for r in s.rows.values()) for t in TABLES}
        return {t: s.count(t) for t in TABLES if s.count(t)}

    for i in range(1, 6):
        s.insert(row(i))
    s.insert(row(6), TIMER)
    assert counts() == {JOB: 5, TIMER: 1}
    s.delete(1)
    assert counts() == {JOB: 4, TIMER: 1}
    s.move(2, DEADLETTER, error="x")
    s.move(3, SUSPENDED)
    assert counts() == {JOB: 2, TIMER: 1, DEADLETTER: 1, SUSPENDED: 1}
    s.reschedule(6, 1.0, 2, "e")                      # timer -> job
    assert counts() == {JOB: 3, DEADLETTER: 1, SUSPENDED: 1}
    assert s.delete(3) is False                       # suspended: not deletable
    s.move(3, JOB)
    s.delete(2, owner=None)                           # dead letter: refused
    assert counts() == {JOB: 4, DEADLETTER: 1}
    for rid in list(s.rows):
        s.delete(rid)
    assert counts() == {DEADLETTER: 1}
    assert set(ACQUIRABLE) == {JOB, TIMER}


# --- lazy invalidation ------------------------------------------------------------------------


def test_an_id_reused_after_delete_is_not_claimed_before_its_due():
    """The guard holds for every row present, whatever was in the table before: a new row
    inserted under the id of a deleted one is not eligible before its own due date.

    (Index entries are invalidated lazily by a stamp. A fresh ``Row`` starts at stamp 0, so
    with per-row stamps an entry left by the deleted row matched the new one; the stamps now
    come from one store-wide counter. This test guards that.)"""
    s = Store()
    s.insert(row(1, due=0.0))
    assert s.delete(1) is True
    s.insert(row(1, due=100.0))
    assert s.select(0.0, 5) == [], (
        "regression: a stale index entry of deleted row 1 (due 0) matched the new row 1 "
        "(due 100); select/claim return a row that is not due")
    assert s.claim("n1", 0.0, 5, 10.0) == []
    assert s.next_eligible(0.0) == 100.0
