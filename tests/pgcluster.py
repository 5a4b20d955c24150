"""A throwaway PostgreSQL cluster for the tests: initdb into a temporary folder, started as
an ordinary process on 127.0.0.1 with a free port, stopped (and deleted) at the end, also
after a failure. As root, the server runs as the ``postgres`` user (PostgreSQL refuses
root). Each call has a cluster of its own (its folder, its port, its socket), so test
processes running side by side (pytest-xdist's workers, two runs at once) share nothing.

``JOBSIM_PG_DSN`` points the tests at a server of your own instead: each call then makes a
database of its own there (``CREATE DATABASE``, dropped at the end), for the same reason;
where the role may not create one, the DSN's own database is used, and only by a run that
is not split over workers (``-n 0``)."""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def _bin(name: str) -> str | None:
    for cand in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return cand
    return shutil.which(name)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_user() -> list[str] | None:
    """The command prefix that runs the server as a user PostgreSQL accepts, or None."""
    if os.geteuid() != 0:
        return []
    runuser = shutil.which("runuser")
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return None
    return [runuser, "-u", "postgres", "--"] if runuser else None


def _start(tmp: Path, as_user: list[str]) -> str | None:
    """initdb and start; the DSN, or None if the server would not start. A port found free
    can be taken by another process before the server binds it: the start is then tried
    again on another port. The timeouts only end a step that is stuck (generous: the
    machine may be busy)."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    data, log = tmp / "data", tmp / "server.log"
    try:
        subprocess.run(as_user + [initdb, "-D", str(data), "-U", "jobsim", "-A", "trust",
                                  "--no-sync", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=300)
    except (subprocess.SubprocessError, OSError):
        return None
    for _ in range(3):
        port = _free_port()
        opts = (f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp} -c fsync=off "
                "-c max_connections=100")
        try:
            subprocess.run(as_user + [pg_ctl, "-D", str(data), "-l", str(log), "-o", opts,
                                      "-w", "-t", "300", "start"],
                           check=True, capture_output=True, timeout=360)
            break
        except (subprocess.SubprocessError, OSError):
            if (data / "postmaster.pid").exists():  # started, but not ready: give up
                return None
    else:
        return None
    dsn = f"postgresql://jobsim@127.0.0.1:{port}/postgres"
    import psycopg

    for _ in range(50):
        try:
            psycopg.connect(dsn, connect_timeout=2).close()
            return dsn
        except psycopg.Error:
            time.sleep(0.2)
    return None


def _stop(tmp: Path, as_user: list[str]) -> None:
    """Stop the server if one ever started (its pid file is there), then delete it all."""
    data, pg_ctl = tmp / "data", _bin("pg_ctl")
    if pg_ctl and (data / "postmaster.pid").exists():
        subprocess.run(as_user + [pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60)
    shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def _own_database(dsn: str):
    """A database of this call's own on the server of ``dsn`` (its DSN), dropped after."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    name = f"jobsim_test_{os.getpid()}_{secrets.token_hex(4)}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error:
        if os.environ.get("PYTEST_XDIST_WORKER"):
            yield None  # shared with the other workers' tests: not safe
        else:
            yield dsn
        return
    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    try:
        yield make_conninfo(**params)
    finally:
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        except psycopg.Error as exc:  # a server older than 13 (no FORCE), a lost connection
            print(f"the test database {name} was left on the server: {exc}")


@contextmanager
def cluster():
    """Yield a DSN for a fresh server (or a fresh database on ``JOBSIM_PG_DSN``'s), or None
    when PostgreSQL cannot be had here."""
    if os.environ.get("JOBSIM_PG_DSN"):
        with _own_database(os.environ["JOBSIM_PG_DSN"]) as dsn:
            yield dsn
        return
    as_user = _as_user()
    if _bin("initdb") is None or _bin("pg_ctl") is None or as_user is None:
        yield None
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield None
        return
    tmp = Path(tempfile.mkdtemp(prefix="jobsim-pg-"))
    if as_user:
        shutil.chown(tmp, "postgres")
    try:
        dsn = _start(tmp, as_user)
        yield dsn  # the body's own exceptions pass through untouched
    finally:
        _stop(tmp, as_user)
