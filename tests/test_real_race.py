"""jobsim race: the model held to real databases. The same claim SQL, run by real worker
processes on SQLite (always) and PostgreSQL (a throwaway cluster started for the session, or
JOBSIM_PG_DSN; skipped when neither can be had), must agree with the simulator's prediction
on the verdict (zero vs non-zero double acquisitions) and on the shape of the batches. The
two-session interleavings of the transaction model run against the real PostgreSQL too."""

import pytest

from jobsim import cli
from jobsim.tools.race import RaceError, predict, race, two_sessions_pg, verdict
from test_two_sessions import CASES, two_sessions

JOBS = 1500


def _both(db, dialect, strategy, k, **kw):
    real = race(db, strategy, k, JOBS, 10, time_limit=60, **kw)
    sim = predict(dialect, strategy, k, JOBS, 10, **kw)
    assert real.jobs_claimed == JOBS and sim.jobs_claimed == JOBS
    return real, sim


SQLITE_CASES = [  # (strategy, begin, safe?, what else both must show)
    ("guarded_update", "autocommit", True, "full"),
    ("unguarded_update", "autocommit", True, "full"),
    ("read_then_write", "autocommit", False, ""),
    ("read_then_write", "deferred", True, "errors"),
    ("read_then_write", "immediate", True, "full"),
    ("optimistic", "autocommit", True, ""),
]


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("case", SQLITE_CASES, ids=[f"{c[0]}-{c[1]}" for c in SQLITE_CASES])
def test_sqlite_real_and_simulated_agree(tmp_path, case, k):
    strategy, begin, safe, shape = case
    real, sim = _both(f"sqlite:{tmp_path / 'race.db'}", "sqlite", strategy, k, begin=begin)
    for o in (real, sim):
        v = verdict(o)
        assert v["safe"] is safe, (o.source, o)
        if shape == "full":  # one writer at a time: every attempt gets a full batch or none
            assert o.partial == 0 and v["full_share"] > 0.9, (o.source, o)
        if shape == "errors":
            assert v["errors"], (o.source, o)  # SQLITE_BUSY at once, never a double


PG_CASES = [  # (strategy, isolation, safe?, shape)
    ("guarded_update", "read_committed", True, "all_or_nothing"),
    ("unguarded_update", "read_committed", False, ""),
    ("read_then_write", "read_committed", False, ""),
    ("optimistic", "read_committed", True, "lost_races"),
    ("skip_locked", "read_committed", True, "full_disjoint"),
    ("guarded_update", "repeatable_read", True, "errors"),
    ("guarded_update", "serializable", True, "errors"),
]


def _pg_shape(o, safe, shape):
    v = verdict(o)
    assert v["safe"] is safe, (o.source, o)
    if shape == "all_or_nothing":
        assert o.partial == 0, (o.source, o)  # every attempt: 0 or 10 rows
    if shape == "full_disjoint":  # a partial batch only at the tail, one per worker
        assert o.partial <= o.workers and o.doubled_jobs == 0 and v["full_share"] > 0.9, \
            (o.source, o)
    if shape == "lost_races":
        assert v["lost_races"], (o.source, o)
    if shape == "errors":
        assert v["errors"], (o.source, o)  # 40001, retried


@pytest.mark.parametrize("k", [2, 4, 8])
@pytest.mark.parametrize("case", PG_CASES, ids=[f"{c[0]}-{c[1]}" for c in PG_CASES])
def test_postgres_real_and_simulated_agree(pg, case, k):
    strategy, isolation, safe, shape = case
    real, sim = _both(pg, "postgres", strategy, k, isolation=isolation)
    _pg_shape(sim, safe, shape)  # the model: deterministic
    try:
        _pg_shape(real, safe, shape)
    except AssertionError:
        # Real processes on a busy 2-core machine: now and then (2 of about 60 such races
        # while this test was written, not reproduced in 30 more) the OS schedules them so
        # that a shape check misses. A second race must then hold.
        real, _ = _both(pg, "postgres", strategy, k, isolation=isolation)
        _pg_shape(real, safe, shape)


PG_SESSIONS = [c for c in CASES if c[0] == "postgres"]


@pytest.mark.parametrize("case", PG_SESSIONS,
                         ids=[f"{c[1]}-{c[2]}-{c[3]}" for c in PG_SESSIONS])
def test_two_sessions_on_real_postgres_match_the_model(pg, case):
    _, strategy, isolation, end, s1, blocked, s2, error, overlap = case
    real = two_sessions_pg(pg, strategy, end, isolation)
    model = two_sessions("postgres", strategy, end, isolation)
    assert real[1:] == model[1:] == (blocked, s2, error, overlap)
    if end == "commit":
        assert real[0] == model[0] == s1


def test_two_sessions_optimistic_on_real_postgres(pg):
    for end, s2_first in (("commit", []), ("rollback", [1])):
        s1, blocked, s2, error, _ = two_sessions_pg(pg, "optimistic", end, n=1)
        assert (s1, blocked, s2, error) == ([1], True, s2_first, None)


def test_the_cli_races_on_sqlite_and_refuses_bad_input(tmp_path, capsys):
    db = f"sqlite:{tmp_path / 'r.db'}"
    assert cli.main(["race", "--db", db, "--strategy", "guarded_update", "--workers", "2",
                     "--jobs", "300", "--plot", str(tmp_path / "race.png")]) == 0
    out = capsys.readouterr().out
    assert "| guarded_update | 2 | 1 | real | 0 (0.000)" in out
    assert "| guarded_update | 2 | 1 | simulated | 0 (0.000)" in out
    assert (tmp_path / "race.png").stat().st_size > 0
    for bad in (["--db", db, "--strategy", "skip_locked"],
                ["--db", "mysql://x", "--strategy", "guarded_update"],
                ["--db", db, "--strategy", "fastest"]):
        assert cli.main(["race"] + bad + ["--workers", "2", "--jobs", "10"]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err and "jobsim:" in err


def test_a_harness_check_fails_when_jobs_are_left_unclaimed(tmp_path):
    with pytest.raises(RaceError, match="never claimed"):
        race(f"sqlite:{tmp_path / 'r.db'}", "guarded_update", 2, 500, 10, max_attempts=3)


def test_bad_targets_and_foreign_tables_are_refused(tmp_path, capsys):
    """Review findings: an unopenable SQLite file gave a traceback; a database's own table
    'job' would have been dropped; --isolation was ignored by strategies that don't run it."""
    import sqlite3

    assert cli.main(["race", "--db", "sqlite:/nonexistent/dir/x.db", "--strategy",
                     "guarded_update", "--workers", "2", "--jobs", "10"]) == 2
    theirs = tmp_path / "theirs.db"
    conn = sqlite3.connect(theirs)
    conn.execute("CREATE TABLE job (id INTEGER PRIMARY KEY, payload TEXT)")
    conn.commit()
    conn.close()
    assert cli.main(["race", "--db", f"sqlite:{theirs}", "--strategy", "guarded_update",
                     "--workers", "2", "--jobs", "10"]) == 2
    assert "did not create" in capsys.readouterr().err
    conn = sqlite3.connect(theirs)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name='job'").fetchone()[0]
    conn.close()
    with pytest.raises(RaceError, match="guarded UPDATE on PostgreSQL only"):
        race(f"sqlite:{tmp_path / 'r.db'}", "read_then_write", 2, 10,
             isolation="serializable")


def test_the_handover_probe_on_real_postgres_leaves_nothing_behind(pg):
    """``handover``: no-op UPDATEs alone and one prober per core; a duration of at most the
    lone statement's, and the database as it was (no race table left)."""
    import psycopg

    from jobsim.tools.race import handover

    saved = handover(pg, 2, statements=300)
    assert 0.0 <= saved < 0.01
    with psycopg.connect(pg) as conn:
        assert conn.execute("SELECT to_regclass('job')").fetchone()[0] is None
