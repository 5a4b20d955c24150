"""view.html built beside the report's other files: where the platform forks and more than
one core is ours, a child process builds the page while this one writes the CSV files and
draws the plots; elsewhere (in a notebook's kernel, or with ``JOBSIM_PARALLEL=0``) it is
built here, after them.
The bytes are the same either way: the same code on the same analyses (a test holds it).

The child's CPU seconds count as the ``page`` phase's (``base.phases``); a stop (Ctrl-C,
SIGTERM) or a failure anywhere ends the child before the report's temporary folder goes.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any


def parallel() -> bool:
    """Whether the page may be built in a child process: fork is there, more than one core
    is this process's, ``JOBSIM_PARALLEL`` is not ``0``, and this is neither a Jupyter kernel
    (a forked kernel's child would share its sockets and output threads) nor a pool's
    worker (which may have no children)."""
    import multiprocessing

    if os.environ.get("JOBSIM_PARALLEL", "1").strip() in ("0", "") or "ipykernel" in sys.modules:
        return False
    if multiprocessing.current_process().daemon:  # a pool's worker may have no children
        return False
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return cores > 1 and "fork" in multiprocessing.get_all_start_methods()


def _build(analyses: list[Any], path: Path) -> None:
    from .view import analyses_page

    path.write_text(analyses_page(analyses), encoding="utf-8")


def _child(send: Any, analyses: list[Any], path: Path) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it (``Page.stop``)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        t = time.process_time()
        _build(analyses, path)
        send.send((True, time.process_time() - t))
    except BaseException:  # the parent raises it, with this traceback
        send.send((False, traceback.format_exc()))
    finally:
        send.close()


class PageError(Exception):
    """The page's child process failed: its traceback."""


class Page:
    """The page of ``analyses`` into ``path``: begun in a child (``begin``) where
    ``parallel()``, finished (``finish``) after the report's other files."""

    def __init__(self, analyses: list[Any], path: Path, steps: Any = None, what: str = ""):
        self.analyses, self.path = analyses, path
        self.steps, self.what = steps, what  # told when the page is begun
        self.proc: Any = None
        self.receive: Any = None

    def begin(self) -> None:
        if not parallel():
            return
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        sys.stdout.flush()  # nothing buffered here is written again by the child
        sys.stderr.flush()
        self.receive, send = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_child, args=(send, self.analyses, self.path),
                                daemon=True)
        self.proc.start()
        send.close()
        if self.steps is not None:
            self.steps.step(self.what)

    def finish(self, phases: Any = None) -> None:
        """The page written: the child's, waited for, or built here now."""
        if self.proc is None:
            from ..base.phases import phase

            if self.steps is not None:
                self.steps.step(self.what)
            with phase(phases, "page"):
                _build(self.analyses, self.path)
            return
        t = time.perf_counter()
        try:
            ok, got = self.receive.recv()
        except EOFError:
            ok, got = False, f"the process building it died (exit code {self.proc.exitcode})"
        finally:
            self.receive.close()
            self.proc.join()
            self.proc = None
        if not ok:
            raise PageError(f"view.html could not be built:\n{got}")
        if phases is not None:
            phases.add("page", time.perf_counter() - t, got)

    def stop(self) -> None:
        """End the child, if any, and wait for it (before its folder is removed)."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.join()
            self.receive.close()
            self.proc = None
