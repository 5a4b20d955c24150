"""A throwaway PostgreSQL cluster for the tests: initdb into a temporary folder, started as
an ordinary process on 127.0.0.1 with a free port, stopped (and deleted) at the end, also
after a failure. As root, the server runs as the ``postgres`` user (PostgreSQL refuses
root). ``JOBSIM_PG_DSN`` points the tests at a server of your own instead."""

from __future__ import annotations

import glob
import os
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


@contextmanager
def cluster():
    """Yield a DSN for a fresh server, or None when PostgreSQL cannot be started here."""
    if os.environ.get("JOBSIM_PG_DSN"):
        yield os.environ["JOBSIM_PG_DSN"]
        return
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        yield None
        return
    as_user: list[str] = []
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            runuser = None
        if runuser is None:
            yield None
            return
        as_user = [runuser, "-u", "postgres", "--"]
    tmp = Path(tempfile.mkdtemp(prefix="jobsim-pg-"))
    data = tmp / "data"
    port = _free_port()
    if as_user:
        shutil.chown(tmp, "postgres")
    log = tmp / "server.log"
    started = False
    try:
        subprocess.run(as_user + [initdb, "-D", str(data), "-U", "jobsim", "-A", "trust",
                                  "--no-sync", "-E", "UTF8"],
                       check=True, capture_output=True, timeout=120)
        opts = (f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp} -c fsync=off "
                "-c max_connections=100")
        subprocess.run(as_user + [pg_ctl, "-D", str(data), "-l", str(log), "-o", opts,
                                  "-w", "-t", "60", "start"],
                       check=True, capture_output=True, timeout=90)
        started = True
        dsn = f"postgresql://jobsim@127.0.0.1:{port}/postgres"
        for _ in range(50):
            try:
                import psycopg

                psycopg.connect(dsn, connect_timeout=2).close()
                break
            except Exception:
                time.sleep(0.2)
        yield dsn
    except (subprocess.SubprocessError, OSError):
        yield None
    finally:
        if started:
            subprocess.run(as_user + [pg_ctl, "-D", str(data), "-m", "immediate", "-w",
                                      "stop"], capture_output=True, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
