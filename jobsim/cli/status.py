"""The command line's exit statuses, and the line it ends with when a signal stops it."""

from __future__ import annotations

import sys
from pathlib import Path

#: 0 all is well; 1 an invariant or an expectation failed; 2 bad input (a scenario file, a
#: flag), reported without a traceback; a command stopped by signal N exits 128 + N
#: (``stopped``)
OK, FAILED, BAD_INPUT = 0, 1, 2


def stopped(exc: BaseException, what: str) -> int:
    """Say, in one line on stderr, which signal stopped the command and ``what`` it left
    (nothing, or what was kept); the exit status, 128 + the signal's number."""
    from ..base.signals import name_of, status_of

    # on a terminal the line starts on its own, not after the ^C the terminal echoed
    start = "\n" if sys.stderr.isatty() else ""
    print(f"{start}jobsim: stopped by {name_of(exc)}; {what}", file=sys.stderr)
    return status_of(exc)


def stopped_with_cache(exc: BaseException, out: Path, what: str) -> int:
    """``stopped`` for a command whose runs are cached in ``out/cache`` (a sweep, a hunt):
    nothing written if the cache was not made yet, else where the finished runs are."""
    if not (out / "cache").is_dir():
        return stopped(exc, "nothing was written")
    return stopped(exc, f"the {what}'s worker processes ended; the runs that finished are "
                        f"cached in {out}/cache: run the same command again to compute only "
                        "the rest")
