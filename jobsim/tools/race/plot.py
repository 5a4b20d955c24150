"""The race's plot file: a path checked before any race runs (a user's other file is never
replaced), and the PNG written whole through a temporary file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .settings import RaceError

_PNG = b"\x89PNG\r\n\x1a\n"


def check_plot(path: str | os.PathLike) -> Path:
    """Raise RaceError unless the plot may be written to ``path``: its folder exists, and the
    path is new or a regular file holding a PNG (a user's other file is never replaced)."""
    p = Path(path)
    if str(path) == "" or p.name in ("", ".", ".."):
        raise RaceError(f"--plot {str(path)!r}: expected a file name, e.g. race.png")
    if not p.parent.is_dir():
        raise RaceError(f"--plot {p}: the folder {p.parent} does not exist")
    if p.is_symlink() or (p.exists() and not p.is_file()):
        raise RaceError(f"--plot {p}: it exists and is not a regular file; choose a new file")
    if p.exists():
        try:
            with open(p, "rb") as f:
                head = f.read(len(_PNG))
        except OSError as exc:
            raise RaceError(f"--plot {p}: cannot read it: {exc.strerror or exc}") from None
        if head != _PNG:
            raise RaceError(f"--plot {p}: it exists and is not a PNG; jobsim will not "
                            "overwrite it, choose a new file")
    if not os.access(p.parent, os.W_OK):
        raise RaceError(f"--plot {p}: the folder {p.parent} is not writable")
    return p


def save_plot(fig: Any, path: str | os.PathLike) -> Path:
    """Write ``fig`` as a PNG to ``path`` (checked again, then a temporary file renamed)."""
    from ...output.plots import save

    p = check_plot(path)
    tmp = p.parent / f".{p.name}.{os.getpid()}.tmp"
    try:
        save(fig, tmp)
        os.replace(tmp, p)
    except OSError as exc:
        raise RaceError(f"--plot {p}: cannot write it: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return p
