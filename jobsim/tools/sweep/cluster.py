"""A sweep's runs on an existing Dask cluster: the scheduler's address checked before
connecting, the connection, and the runs submitted a window at a time.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from ...base.errors import Problem, ScenarioError
from .runs import SweepError, _run_packed

#: seconds to reach a Dask scheduler
DASK_TIMEOUT = 30.0

_HOST = r"(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)"
_HOST_PORT = re.compile(rf"^(?:(?P<scheme>tcp|tls|ucx|ws|wss)://)?(?P<host>{_HOST}):"
                        r"(?P<port>[0-9]{1,5})/?$")
_INPROC = re.compile(r"^inproc://[^\s/]+(?:/[^\s]*)?$")


def check_dask_address(address: Any, where: str = "the command line") -> None:
    """Refuse an address that is not a Dask scheduler's: ``tcp://``, ``tls://``, ``ucx://``,
    ``ws://``/``wss://`` with ``host:port``, ``inproc://…``, or a bare ``host:port``."""
    ok = isinstance(address, str)
    if ok and not _INPROC.match(address):
        m = _HOST_PORT.match(address)
        ok = m is not None and 1 <= int(m["port"]) <= 65535
    if not ok:
        raise ScenarioError([Problem(
            "--dask", "a Dask scheduler's address: tcp://HOST:PORT (also tls://, ucx://, "
            "ws://, wss://, inproc://…) or HOST:PORT, e.g. tcp://10.0.0.5:8786", repr(address),
            "the scheduler prints its address when it starts")], where)


def _tcp_target(address: str) -> tuple[str, int] | None:
    m = _HOST_PORT.match(address)
    if m is None or m["scheme"] == "ucx":
        return None
    return m["host"].strip("[]"), int(m["port"])


def connect_dask(address: str, timeout: float = DASK_TIMEOUT) -> Any:
    """A ``distributed.Client`` on the scheduler at ``address``; SweepError with the reason
    when it cannot be reached (a refused connection fails at once, not after ``timeout``)."""
    try:
        from distributed import Client
    except ImportError:
        raise SweepError("--dask needs Dask's distributed package: pip install "
                         "'jobsim[dask]'") from None
    target = _tcp_target(address)
    if target is not None:
        import socket

        try:
            socket.create_connection(target, timeout=min(5.0, timeout)).close()
        except OSError as exc:
            raise SweepError(f"cannot reach the Dask scheduler at {address}: "
                             f"{exc.strerror or exc or type(exc).__name__}; is it running, and "
                             "is that its address?") from None
    try:
        return Client(address, timeout=f"{timeout}s")
    except Exception as exc:  # noqa: BLE001 - whatever distributed raises: one clear message
        raise SweepError(f"cannot connect to the Dask scheduler at {address}: "
                         f"{type(exc).__name__}: {exc}") from None


def _on_dask(client: Any, todo: list[tuple[str, tuple]],
             finish: Callable[[str, dict[str, Any]], None]) -> None:
    from distributed import as_completed

    try:
        threads = sum(client.nthreads().values())
    except Exception:  # noqa: BLE001 - only the window's size depends on it
        threads = 8
    queue = iter(todo)
    keys = {client.submit(_run_packed, task, pure=False): key
            for key, task in itertools.islice(queue, max(16, 4 * threads))}
    running = as_completed(list(keys))
    try:
        for fut in running:
            key = keys.pop(fut)
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - the cluster failed, not the run
                raise SweepError(f"the Dask cluster failed: {type(exc).__name__}: {exc}"
                                 ) from None
            finish(key, row)
            for k, task in itertools.islice(queue, 1):
                nxt = client.submit(_run_packed, task, pure=False)
                keys[nxt] = k
                running.add(nxt)
    except BaseException:
        try:
            client.cancel(list(keys))
        except Exception:  # noqa: BLE001 - the client may be gone already
            pass
        raise
