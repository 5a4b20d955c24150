"""Local worker processes for a sweep's runs: a process pool whose workers end with the
sweep's process (on Linux by ``PR_SET_PDEATHSIG``, elsewhere by a thread that watches the
parent's pid), and are killed when the sweep stops.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ...base.signals import worker_defaults
from .runs import SweepError, _run_packed

#: the most local worker processes
MAX_WORKERS = 512

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent() -> bool:
    """Linux: ask the kernel to SIGKILL this process when its parent ends
    (``prctl(PR_SET_PDEATHSIG, SIGKILL)``); False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
        prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                          ctypes.c_ulong]
        prctl.restype = ctypes.c_int
        return prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError, TypeError):
        return False


def watch_parent(parent: int, interval: float = 0.5,
                 on_orphan: Callable[[int], Any] = os._exit) -> None:
    """Return only after calling ``on_orphan(1)`` when this process's parent is no longer
    ``parent`` (it ended and this process was re-parented): the fallback of
    ``die_with_parent``, run in a daemon thread of each worker."""
    while os.getppid() == parent:
        time.sleep(interval)
    on_orphan(1)


def _worker_init(parent: int) -> None:
    """The pool's initializer, in each worker process."""
    # fork copies the parent's handlers: a worker must die of SIGTERM, and leave Ctrl-C and
    # a hang-up (sent to the whole process group) to the parent, which stops the pool
    worker_defaults()
    die_with_parent()
    if os.getppid() != parent:  # the parent ended before the line above took effect
        os._exit(1)
    threading.Thread(target=watch_parent, args=(parent,), name="jobsim-watch-parent",
                     daemon=True).start()


def _stop_pool(pool: Any, pending: Iterable[Any]) -> None:
    """Cancel what has not started, kill the workers (their runs are lost, not half-kept:
    only the parent writes the cache) and shut the pool."""
    for fut in pending:
        fut.cancel()
    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            p.kill()
        except (OSError, ValueError, AttributeError):
            pass
    pool.shutdown(wait=True, cancel_futures=True)


def _in_pool(todo: list[tuple[str, tuple]], workers: int,
             finish: Callable[[str, dict[str, Any]], None]) -> None:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    # fork where there is one: the workers need not re-import the caller's main module
    # (a notebook, stdin); each run builds everything it uses from its arguments
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                               initializer=_worker_init, initargs=(os.getpid(),))
    pending: dict[Any, str] = {}
    queue = iter(todo)
    window = 4 * workers  # a few runs queued per worker, not the whole sweep at once
    try:
        while True:
            for key, task in itertools.islice(queue, window - len(pending)):
                pending[pool.submit(_run_packed, task)] = key
            if not pending:
                break
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                key = pending.pop(fut)
                try:
                    row = fut.result()
                except BrokenProcessPool as exc:
                    raise SweepError(f"a worker process ended abruptly ({exc}); the runs "
                                     "that finished are cached: run the sweep again (with "
                                     "--workers 1 to see the failing run)") from None
                finish(key, row)
    except BaseException:
        _stop_pool(pool, pending)
        raise
    pool.shutdown(wait=True)
