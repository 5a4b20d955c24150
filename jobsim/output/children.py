"""Parts of a report built beside the rest: where the platform forks and more than one core
is ours, a child process builds view.html while this one writes the CSV files and draws the
plots, and a second child either draws every other one of a big run's plots or, for a bigger
run, writes its CSV files while all the plots are drawn here (``output.run_files``);
elsewhere (in a notebook's kernel, or with ``JOBSIM_PARALLEL=0``) all is built here, one
after the other.
The bytes are the same either way: the same code on the same analyses (tests hold it).

A child's CPU seconds count as its phase's (``base.phases``: the page's, the plots', the CSV
files'); an OSError there (a full disk) is raised here as it was raised there; a stop
(Ctrl-C, SIGTERM) or a failure anywhere ends the child before the report's temporary folder
goes.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any


def parallel() -> bool:
    """Whether work may be done in a child process: fork is there, more than one core is
    this process's, ``JOBSIM_PARALLEL`` is not ``0``, and this is neither a Jupyter kernel
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


def _die_with_parent() -> None:
    """Linux: SIGTERM this child when its parent dies (killed outright, the parent cannot
    stop it): nothing then goes on writing into a folder nobody owns."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(send: Any, parent: int, work: Callable[[], None]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops it (``Child.stop``)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    try:
        t = time.process_time()
        got = work()
        send.send((True, time.process_time() - t, got))
    except OSError as exc:  # a full disk, say: the parent raises it as its own, so the
        # command says what it says of a file it could not write
        send.send((False, traceback.format_exc(), _plain(exc)))
    except BaseException:  # the parent raises it, with this traceback
        send.send((False, traceback.format_exc(), None))
    finally:
        send.close()


def _plain(exc: OSError) -> OSError:
    """``exc`` as a plain OSError of the same kind (errno, text, file names): one that
    pickles whatever its class."""
    return OSError(exc.errno, exc.strerror, exc.filename, None, exc.filename2) \
        if exc.errno is not None else OSError(*exc.args[:1] or (str(exc),))


class ChildError(Exception):
    """A child process failed: what it was doing, and its traceback. Not the user's input
    but jobsim's own failure, as the same exception raised in the process would be (it is
    not turned into a usage error)."""


class Child:
    """``work()`` in a forked child: ``begin`` it, ``wait`` for it (its CPU seconds; what
    ``work`` returned, which must pickle, is then ``result``), and ``stop`` it on the way
    out whatever happened. ``what`` names the work in an error ("view.html could not be
    built")."""

    def __init__(self, work: Callable[[], Any], what: str):
        self.work, self.what = work, what
        self.proc: Any = None
        self.receive: Any = None
        self.result: Any = None

    def begin(self) -> bool:
        """Fork the child; False (and nothing left open) where the fork fails: the caller
        does the work itself."""
        import multiprocessing

        ctx = multiprocessing.get_context("fork")
        sys.stdout.flush()  # nothing buffered here is written again by the child
        sys.stderr.flush()
        self.receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, os.getpid(), self.work), daemon=True)
        # the objects alive now, out of the collector's sight in the child: a collection
        # there would write to every one of them, and copy each page of them shared with
        # this process (at 1,000,000 jobs, 140 MB more in all); not where the program froze
        # its own objects already (its freeze is its own, and unfreezing would undo it)
        ours = gc.get_freeze_count() == 0
        if ours:
            gc.freeze()
        try:
            proc.start()
        except OSError:  # no memory or no process left for a fork
            self.receive.close()
            self.receive = None
            return False
        finally:
            if ours:
                gc.unfreeze()
            send.close()
        self.proc = proc
        return True

    def wait(self) -> float:
        """The child's CPU seconds once it ended; ChildError if it failed. A stop while
        waiting (Ctrl-C, SIGTERM) ends the child at once."""
        try:
            ok, got, self.result = self.receive.recv()
        except EOFError:
            ok, got = False, f"the process doing it died (exit code {self.proc.exitcode})"
        except BaseException:
            self.stop()
            raise
        self.receive.close()
        self.proc.join()
        self.proc = None
        if not ok:
            if isinstance(self.result, OSError):  # as the work raised it in this process
                raise self.result from ChildError(f"{self.what}:\n{got}")
            raise ChildError(f"{self.what}:\n{got}")
        return got

    def waited(self, phases: Any, name: str) -> Any:
        """``wait`` for the child, its CPU seconds and this process's wait for it told to
        ``phases`` (if any) as phase ``name``'s; what its work returned."""
        t = time.perf_counter()
        cpu = self.wait()
        if phases is not None:
            phases.add(name, time.perf_counter() - t, cpu)
        return self.result

    def stop(self) -> None:
        """End the child, if any, and wait for it (before its folder is removed); nothing
        once it was waited for."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.join()
            self.receive.close()
            self.proc = None


def begun(work: Callable[[], Any], what: str) -> Child | None:
    """``work`` begun in a forked child (``Child``), or None where the fork fails: the
    caller does the work itself."""
    child = Child(work, what)
    return child if child.begin() else None


def _build(analyses: list[Any], path: Path) -> None:
    from .view import analyses_page

    path.write_text(analyses_page(analyses), encoding="utf-8")


#: runs of this many trace events in all, or more, have their page built in a child: below,
#: the fork costs more CPU than the page (the lesson's: 0.05 CPU s more, for 0.02 s of wall)
PAGE_FROM = 50_000


class Page:
    """The page of ``analyses`` into ``path``: begun in a child (``begin``) where
    ``parallel()`` and the runs have ``PAGE_FROM`` trace events or more, finished
    (``finish``) after the report's other files."""

    def __init__(self, analyses: list[Any], path: Path, steps: Any = None, what: str = ""):
        self.analyses, self.path = analyses, path
        self.steps, self.what = steps, what  # told when the page is begun
        self.child: Child | None = None

    def begin(self) -> None:
        if sum(len(a.result.trace) for a in self.analyses) < PAGE_FROM or not parallel():
            return
        # ``_build`` looked up when the child runs it (a test replaces it)
        self.child = begun(lambda: _build(self.analyses, self.path),
                           "view.html could not be built")
        if self.child is None:
            return  # built here, after the other files
        if self.steps is not None:
            self.steps.step(self.what)

    def finish(self, phases: Any = None) -> None:
        """The page written: the child's, waited for, or built here now (its memory given
        back to the system then)."""
        from ..base import memory

        if self.child is None:
            from ..base.phases import phase

            if self.steps is not None:
                self.steps.step(self.what)
            with phase(phases, "page"):
                _build(self.analyses, self.path)
        else:
            child, self.child = self.child, None
            child.waited(phases, "page")  # a stop meanwhile ends the child
        memory.release()

    def stop(self) -> None:
        """End the child, if any, and wait for it (before its folder is removed)."""
        if self.child is not None:
            self.child.stop()
            self.child = None
