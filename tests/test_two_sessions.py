"""The deterministic two-session interleavings that real PostgreSQL and SQLite show.

The table has 40 due rows with distinct priorities, so the top 10 (ORDER BY priority DESC) are
ids 1..10. Session S1 claims a batch and keeps its transaction open; S2 runs the same strategy;
an observer looks whether S2 is waiting; then S1 commits or rolls back. Each case here is
one interleaving as the real databases run it: who blocks, what each session gets, how many
rows overlap, which error.
"""

import pytest
import simpy

from jobsim.database.db import Database
from jobsim.database.dialects import STRATEGIES
from jobsim.base.rng import Streams
from jobsim.database.store import Row, Store

TOP = list(range(1, 11))
NEXT = list(range(11, 21))


def _db(dialect, isolation="read_committed", begin="autocommit"):
    env = simpy.Environment()
    store = Store(order="priority")
    for i in range(1, 41):
        store.insert(Row(i, "async", "w", 100 - i, 0.0, 0.0, 3))
    env.run(until=1e-9)  # the rows exist before the sessions start
    return Database(env, store, Streams(0), dialect=dialect, isolation=isolation,
                    sqlite_begin=begin)


def _sessions(dialect, strategy, s1_end, isolation="read_committed", begin="autocommit",
              n=10):
    """S1 claims ``n`` rows and holds its transaction; S2 starts at t=1; the observer looks at
    t=2 whether S2 waits; S1 commits or rolls back at t=3. The raw outcomes."""
    db = _db(dialect, isolation, begin)
    env, fn = db.env, STRATEGIES[dialect][strategy]
    hold = env.event()
    out = {}

    def s1():
        out["s1"] = yield from fn(db, "S1", n, 30.0, hold=hold)

    def s2():
        yield env.timeout(1)
        out["s2"] = yield from fn(db, "S2", n, 30.0)

    def observer():
        yield env.timeout(2)
        out["blocked"] = "s2" not in out
        yield env.timeout(1)
        hold.succeed(s1_end)

    env.process(s1())
    env.process(s2())
    env.process(observer())
    env.run(until=10)
    return out


def two_sessions(dialect, strategy, s1_end, isolation="read_committed", begin="autocommit"):
    """(S1 claimed, S2 blocked?, S2 got, S2's error, rows both claimed)."""
    out = _sessions(dialect, strategy, s1_end, isolation, begin)
    s1_ids = [lk.id for lk in out["s1"].locked]
    s2_ids = [lk.id for lk in out["s2"].locked]
    overlap = len(set(s1_ids) & set(s2_ids))
    return s1_ids, out["blocked"], s2_ids, out["s2"].error, overlap


# (dialect, strategy, isolation, S1 ends, S1 claimed, S2 blocked, S2 gets, S2 error, overlap)
CASES = [
    ("postgres", "guarded_update", "read_committed", "commit", TOP, True, [], None, 0),
    ("postgres", "guarded_update", "read_committed", "rollback", [], True, TOP, None, 0),
    ("postgres", "unguarded_update", "read_committed", "commit", TOP, True, TOP, None, 10),
    ("postgres", "read_then_write", "read_committed", "commit", TOP, True, TOP, None, 10),
    ("postgres", "skip_locked", "read_committed", "commit", TOP, False, NEXT, None, 0),
    ("postgres", "guarded_update", "repeatable_read", "commit", TOP, True, [], "40001", 0),
    ("postgres", "guarded_update", "repeatable_read", "rollback", [], True, TOP, None, 0),
    ("postgres", "guarded_update", "serializable", "commit", TOP, True, [], "40001", 0),
    ("sqlite", "guarded_update", "read_committed", "commit", TOP, True, NEXT, None, 0),
    ("sqlite", "unguarded_update", "read_committed", "commit", TOP, True, NEXT, None, 0),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}-{c[3]}" for c in CASES])
def test_two_sessions(case):
    dialect, strategy, isolation, end, s1, blocked, s2, error, overlap = case
    got = two_sessions(dialect, strategy, end, isolation)
    assert got == (s1, blocked, s2, error, overlap)


def test_postgres_optimistic_version_check():
    """D: S1 updates row 1 by id and version and holds; S2's update of row 1 waits, then finds
    the version moved (0 rows); had S1 rolled back, S2 gets row 1."""
    for end, s2_first in (("commit", []), ("rollback", [1])):
        out = _sessions("postgres", "optimistic", end, n=1)
        assert out["blocked"] is True
        assert [lk.id for lk in out["s2"].locked] == s2_first
        assert out["s2"].lost == (1 if end == "commit" else 0)


def test_sqlite_deferred_read_then_write_fails_at_once():
    """C in BEGIN DEFERRED: while S1 holds the write lock, S2's upgrade fails at once with
    SQLITE_BUSY (the busy timeout is not used); after S1 committed, SQLITE_BUSY_SNAPSHOT."""
    got = two_sessions("sqlite", "read_then_write", "commit", begin="deferred")
    assert got == (TOP, False, [], "SQLITE_BUSY", 0)
    db = _db("sqlite", begin="deferred")
    env, fn = db.env, STRATEGIES["sqlite"]["read_then_write"]
    out = {}

    def s2_reads_first():
        out["s2"] = yield from fn(db, "S2", 10, 30.0, hold=None)

    # S2 reads, S1 writes and commits, then S2 tries to write: its snapshot is stale
    def s1():
        yield env.timeout(0.5)
        out["s1"] = yield from STRATEGIES["sqlite"]["guarded_update"](db, "S1", 10, 30.0)

    # S2's SELECT takes 1 s; S1's write (0.2 s) commits in between
    db.sample_latency = lambda node: 0.2 if node == "S1" else 1.0
    env.process(s2_reads_first())
    env.process(s1())
    env.run(until=10)
    assert out["s2"].error == "SQLITE_BUSY_SNAPSHOT" and out["s2"].locked == []


def test_sqlite_autocommit_read_then_write_doubles():
    """C as two autocommit statements: both SELECTs see rows 1..10; the first UPDATE commits,
    the second overwrites it (10 rows claimed twice, nobody blocked)."""
    db = _db("sqlite")
    env, fn = db.env, STRATEGIES["sqlite"]["read_then_write"]
    db.sample_latency = lambda node: 1.0
    out = {}

    def session(name, delay):
        yield env.timeout(delay)
        out[name] = yield from fn(db, name, 10, 30.0)

    env.process(session("S1", 0.0))
    env.process(session("S2", 0.5))
    env.run(until=10)
    s1 = [lk.id for lk in out["S1"].locked]
    s2 = [lk.id for lk in out["S2"].locked]
    assert s1 == TOP and s2 == TOP
    assert all(lk.previous_valid for lk in out["S2"].locked)


def test_repeatable_read_fails_on_any_target_row_changed_since_the_snapshot():
    """S1 holds row 1 (n=1) and later rolls back; S2 (REPEATABLE READ) snapshots rows 1..10
    and waits on row 1; meanwhile S3 (SKIP LOCKED) commits rows 2..11. S2 must fail with
    40001 rather than overwrite S3's rows — under READ COMMITTED it would re-check instead."""
    for isolation, expect_error in (("repeatable_read", "40001"), ("read_committed", None)):
        db = _db("postgres", isolation=isolation)
        env, out, hold = db.env, {}, None
        hold = env.event()
        pg = STRATEGIES["postgres"]

        def s1():
            out["s1"] = yield from pg["guarded_update"](db, "S1", 1, 30.0, hold=hold)

        def s2():
            yield env.timeout(1)
            out["s2"] = yield from pg["guarded_update"](db, "S2", 10, 30.0)

        def s3():
            yield env.timeout(2)
            out["s3"] = yield from pg["skip_locked"](db, "S3", 10, 30.0)
            yield env.timeout(1)
            hold.succeed("rollback")

        for p in (s1, s2, s3):
            env.process(p())
        env.run(until=10)
        assert [lk.id for lk in out["s3"].locked] == list(range(2, 12))
        assert out["s2"].error == expect_error
        if expect_error is None:  # READ COMMITTED: re-check; only row 1 is still free
            assert [lk.id for lk in out["s2"].locked] == [1]


def test_a_transaction_holds_its_pool_connection():
    """With one connection, three SKIP LOCKED sessions run one after another."""
    db = _db("postgres")
    db.pool = simpy.Resource(db.env, capacity=1)
    db.sample_latency = lambda node: 1.0
    done = {}

    def session(name):
        yield from STRATEGIES["postgres"]["skip_locked"](db, name, 10, 30.0)
        done[name] = db.env.now

    for name in "ABC":
        db.env.process(session(name))
    db.env.run(until=20)
    assert sorted(done.values()) == pytest.approx([2.0 + 1e-9, 4.0 + 1e-9, 6.0 + 1e-9])


def test_zero_latency_sqlite_deferred_retries_terminate():
    """SQLITE_BUSY at once with no statement latency: the node retries after the others had
    their turn, instead of spinning in one instant."""
    from jobsim.format import scenario
    from jobsim.sim.world import run

    sc = scenario.loads("""
name: busy
until: drained
horizon: 1h
db: {dialect: sqlite, sqlite_begin: deferred}
executor: {acquisition: read_then_write, poll_interval: 1s}
nodes: 2
handlers: {w: {duration: 1s}}
workload: {streams: [{name: s, handler: w, count: 50}]}
""")
    assert run(sc).drained
