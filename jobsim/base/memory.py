"""Giving freed memory back to the system between the phases of a big run.

The analysis and the report allocate and free hundreds of megabytes of arrays; glibc's
allocator keeps much of what was freed in its heap, so the process's resident memory (and
its peak, at the next phase) stays higher than what it holds. ``release()`` asks the
allocator to return it (``malloc_trim``, on Linux with glibc; elsewhere it does nothing).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from functools import cache
from typing import Any


@cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release() -> None:
    """Return the heap's free memory to the system, where the platform can."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
