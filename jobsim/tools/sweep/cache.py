"""The sweep's cache: one JSON file per run, named by (scenario, overrides, seed), holding
the run's row with the model version and the row's checksum; an entry is used only if it
checks, anything else is computed again and counted. The model version is derived from the
code that makes a row.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ...base import outdir
from .disk import BLOCK


def _doc_hash(doc: dict[str, Any]) -> str:
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def task_key(doc_hash: str, overrides: tuple[tuple[str, Any], ...], seed: int) -> str:
    """The cache file's name for a run. The model version is not in it: an entry from older
    code is found, seen to be stale, computed again and replaced (the cache does not grow
    with every change of the code)."""
    text = json.dumps([doc_hash, [list(o) for o in overrides], seed],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


# --- the model version ------------------------------------------------------------------------

#: jobsim's modules that cannot change a run's row: the command line, output folders,
#: progress bars, plots and races on real databases. Every other module is in the model
#: version (a change there, even a harmless one, only makes the cache compute again).
NOT_IN_MODEL = ("cli.py", "cli/", "__main__.py", "base/outdir.py", "base/progress.py",
                "output/plots.py", "output/plots/", "tools/race.py", "tools/race/")
#: the package whose sources ``model_version`` hashes: all of jobsim, every layer
_PACKAGE = Path(__file__).resolve().parents[2]


def code_hash(package: str | Path) -> str:
    """SHA-256 over the paths and bytes of the package's ``.py`` files, in every folder,
    that make a row (not the command line, the figures, the race or the progress bar)."""
    root = Path(package)
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if "__pycache__" in name or name.startswith(NOT_IN_MODEL):
            continue
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


@functools.cache
def model_version() -> str:
    """The version of the model, derived from the code (computed once per process): the
    hash of jobsim's own source (``code_hash``) with the versions of Python, NumPy and
    SimPy, whose random streams and scheduling a run depends on."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        code = code_hash(_PACKAGE)
    except OSError:  # the source cannot be read (a zip?): no cache entry is ever trusted
        code = "unreadable-" + os.urandom(16).hex()
    parts = [code, "python " + ".".join(map(str, sys.version_info[:3]))]
    for dist in ("numpy", "simpy"):
        try:
            parts.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            parts.append(f"{dist} ?")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


# --- the cache --------------------------------------------------------------------------------

#: a cache entry's keys
ENTRY_KEYS = frozenset({"model", "scenario", "overrides", "seed", "row", "row_sha256"})
#: a cache entry larger than this is not one jobsim wrote (a row is a few kB)
MAX_ENTRY_BYTES = 1 << 20
#: the keys every cached row has, with their types (only runs that ran are cached)
_ROW_REQUIRED: dict[str, type] = {"seed": int, "ok": bool, "violations": int,
                                  "scenario": str, "trace_sha256": str, "trace_events": int}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
#: columns a row must not carry: the table puts them there
RESERVED_IN_ROW = ("point", "replication")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False, default=str)


def row_sha256(row: dict[str, Any]) -> str:
    """The SHA-256 of the row's canonical JSON (ValueError for a NaN or an infinity)."""
    return hashlib.sha256(_canonical(row).encode()).hexdigest()


def cache_entry(doc_hash: str, overrides: tuple[tuple[str, Any], ...], seed: int,
                row: dict[str, Any]) -> dict[str, Any]:
    """What the cache stores for a run: its key fields, the model version, the row and the
    row's checksum."""
    return {"model": model_version(), "scenario": doc_hash,
            "overrides": json.loads(_canonical([list(o) for o in overrides])), "seed": seed,
            "row": row, "row_sha256": row_sha256(row)}


def _row_ok(row: Any, seed: int, forbidden: frozenset[str]) -> bool:
    if not isinstance(row, dict) or row.get("error", 0) is not None:
        return False
    for key, kind in _ROW_REQUIRED.items():
        value = row.get(key)
        if type(value) is not kind:  # noqa: E721 - exact: a bool is not an int here
            return False
    if row["ok"] is not True or row["seed"] != seed or row["violations"] < 0 or \
            row["trace_events"] < 0 or not _HEX64.match(row["trace_sha256"]):
        return False
    for key, value in row.items():
        if not isinstance(key, str) or key in forbidden:
            return False
        if value is None or type(value) in (bool, int, str):
            continue
        if type(value) is float and math.isfinite(value):
            continue
        return False
    return True


def check_entry(entry: Any, doc_hash: str, overrides: tuple[tuple[str, Any], ...],
                seed: int, forbidden: Iterable[str] = ()) -> dict[str, Any] | None:
    """The entry's row if the entry is one jobsim wrote for this very run with this model
    version, and its row is intact; None otherwise."""
    if not isinstance(entry, dict) or set(entry) != ENTRY_KEYS:
        return None
    if entry["model"] != model_version() or entry["scenario"] != doc_hash:
        return None
    if type(entry["seed"]) is not int or entry["seed"] != seed:
        return None
    try:
        if _canonical(entry["overrides"]) != _canonical([list(o) for o in overrides]):
            return None
    except (TypeError, ValueError):
        return None
    row = entry["row"]
    if not _row_ok(row, seed, frozenset(RESERVED_IN_ROW) | frozenset(forbidden)):
        return None
    try:
        if entry["row_sha256"] != row_sha256(row):
            return None
    except (TypeError, ValueError):
        return None
    return row


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} in a cache entry")


def _on_disk(size: int) -> int:
    return -(-size // BLOCK) * BLOCK


class _Cache:
    """One JSON file per run in ``folder`` (a folder jobsim owns whole), at most ``limit``
    bytes of them on disk: past it nothing more is cached and ``full`` says so. A ``fresh``
    cache reads none of its entries (each run is computed again) and writes them anew."""

    def __init__(self, folder: Path | None, doc_hash: str = "",
                 forbidden: Iterable[str] = (), limit: float = math.inf,
                 fresh: bool = False):
        self.folder = folder
        self.fresh = fresh
        self.doc_hash = doc_hash
        self.forbidden = tuple(forbidden)
        self.damaged = 0  # entries there but damaged or stale
        self.limit, self.bytes, self.full = limit, 0, False
        if folder is not None:
            outdir.make_dir(folder)
            with os.scandir(folder) as entries:  # what an earlier sweep or hunt cached
                self.bytes = sum(_on_disk(e.stat(follow_symlinks=False).st_size)
                                 for e in entries if e.is_file(follow_symlinks=False))

    def get(self, key: str, overrides: tuple[tuple[str, Any], ...],
            seed: int) -> dict[str, Any] | None:
        if self.folder is None or self.fresh:
            return None
        path = self.folder / f"{key}.json"
        if not path.exists() and not path.is_symlink():
            return None
        row = self._read(path, overrides, seed)
        if row is None:
            self.damaged += 1
        return row

    def _read(self, path: Path, overrides: tuple[tuple[str, Any], ...],
              seed: int) -> dict[str, Any] | None:
        try:
            # not a symlink, a folder or a FIFO (reading one would block), not huge
            if path.is_symlink() or not path.is_file() or \
                    path.stat().st_size > MAX_ENTRY_BYTES:
                return None
            entry = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constant)
        except (OSError, ValueError, RecursionError):
            return None  # torn by an interrupted write, edited, not JSON: compute it again
        return check_entry(entry, self.doc_hash, overrides, seed, self.forbidden)

    def put(self, key: str, overrides: tuple[tuple[str, Any], ...], seed: int,
            row: dict[str, Any]) -> None:
        if self.folder is None:
            return
        try:
            text = json.dumps(cache_entry(self.doc_hash, overrides, seed, row),
                              sort_keys=True, allow_nan=False, default=str)
        except (TypeError, ValueError):
            return  # a row JSON cannot hold exactly (a NaN): not cached, computed next time
        dest = self.folder / f"{key}.json"
        if dest.is_dir() and not dest.is_symlink():
            return  # a folder in the way: leave it, compute this run next time
        size = _on_disk(len(text.encode("utf-8")))
        old = _on_disk(dest.stat().st_size) if dest.is_file() and not dest.is_symlink() else 0
        if self.bytes - old + size > self.limit:
            self.full = True  # the run stays in hand; the cache grows no more
            return
        tmp = self.folder / f".{key}.{os.getpid()}.tmp"
        try:
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, dest)
            self.bytes += size - old
        finally:
            if tmp.exists():
                tmp.unlink()
