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


@pytest.fixture
def dask_scheduler(tmp_path):
    """The address of a Dask LocalCluster of two worker processes for one test, or a skip
    where Dask is not installed. Free ports (the scheduler's, and its HTTP server's, which
    would try 8787 first; no dashboard) and a scratch folder of the test's own, the
    scheduler's too: by default it takes the temporary folder's dask-scratch-space, which
    every cluster on the machine shares."""
    distributed = pytest.importorskip("distributed")
    dask = pytest.importorskip("dask")
    scratch = str(tmp_path / "dask-scratch")
    with dask.config.set({"temporary-directory": scratch}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     scheduler_port=0, dashboard_address=":0",
                                     scheduler_kwargs={"dashboard": False},
                                     local_directory=scratch) as cluster:
        yield cluster.scheduler_address
