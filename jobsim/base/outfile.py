"""One file written into a folder jobsim wrote (``jobsim view`` adds a run's page to its run
folder): allowed where the folder's manifest lists the file with the bytes it has, or where
nothing lists it and a mark in the file proves jobsim wrote it; listed in that manifest
once written."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .outdir import OutputError, _write_manifest, read_manifest, sha256_of
from .signals import held


def _owner(dest: Path) -> tuple[Path, dict[str, Any]] | None:
    """The jobsim folder a file belongs to: its own folder's or, for a file of a variant's
    sub-folder, the folder above's (the first of them with a manifest), with its manifest."""
    for folder in (dest.parent, dest.parent.parent):
        manifest = read_manifest(folder)
        if manifest is not None:
            return folder, manifest
    return None


def check_file(dest: str | Path, ours: Callable[[Path], bool]) -> None:
    """Raise OutputError unless jobsim may write the one file ``dest``: it is new, or the
    manifest of its folder lists it with the bytes it has, or no manifest lists it and
    ``ours(dest)`` proves jobsim wrote it (a mark in the file). Nothing is written."""
    dest = Path(dest)
    if dest.is_symlink():
        raise OutputError(f"refusing to write {dest}: it is a symbolic link")
    if dest.is_dir():
        raise OutputError(f"refusing to write {dest}: it is a folder")
    if not dest.parent.is_dir():
        raise OutputError(f"cannot write {dest}: the folder {dest.parent} does not exist")
    if not dest.exists():
        return
    owner = _owner(dest)
    rel = dest.relative_to(owner[0]).as_posix() if owner else ""
    if owner is not None and rel in owner[1]["files"]:
        if sha256_of(dest) != owner[1]["files"][rel]:
            raise OutputError(f"refusing to overwrite {dest}: it changed since jobsim wrote "
                              "it; move your copy away or choose another file")
    elif not ours(dest):
        raise OutputError(f"refusing to overwrite {dest}: jobsim did not write it; move it "
                          "away or choose another file")


def write_file(dest: str | Path, writer: Callable[[Path], None],
               ours: Callable[[Path], bool]) -> Path:
    """Write the one file ``dest`` (``writer(tmp)`` writes it; an atomic rename puts it in
    place) where ``check_file`` allows it, and list it in its folder's manifest, if the
    folder has one (a run folder: ``jobsim view`` adds its page there)."""
    dest = Path(dest)
    check_file(dest, ours)
    tmp = dest.parent / f".{dest.name}.{os.getpid()}.tmp"
    try:
        writer(tmp)
        with held():  # the file and its line in its folder's manifest, or neither
            os.replace(tmp, dest)
            owner = _owner(dest)
            if owner is not None:
                folder, manifest = owner
                files = dict(manifest["files"])
                files[dest.relative_to(folder).as_posix()] = sha256_of(dest)
                _write_manifest(folder, manifest["kind"], files, manifest.get("dirs", []))
    finally:
        if tmp.exists():
            tmp.unlink()
    return dest
