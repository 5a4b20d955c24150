from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


@pytest.fixture
def lesson_path() -> Path:
    return SCENARIOS / "lesson.yaml"


@pytest.fixture
def race_text() -> str:
    return (SCENARIOS / "race.yaml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def pg():
    """A throwaway PostgreSQL cluster on 127.0.0.1 for one test module (its DSN), or a skip
    where there is no PostgreSQL or psycopg."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed")
    from pgcluster import cluster

    with cluster() as dsn:
        if dsn is None:
            pytest.skip("no PostgreSQL here (no initdb, or it would not start; with "
                        "JOBSIM_PG_DSN: a role that may not CREATE DATABASE, under -n)")
        yield dsn
