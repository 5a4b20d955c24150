"""Output folders that jobsim can prove it wrote.

Every folder jobsim writes (a run's report folder, a sweep folder) holds a manifest,
``.jobsim-manifest.json``: what kind of folder it is and the SHA-256 of every file jobsim put
in it. jobsim writes into a folder only if it is new, empty, or carries a manifest, and it
replaces or deletes only files the manifest lists *and* whose bytes are still the ones it
wrote. Anything else — a folder of the user's, a file the user added beside the report, a
report the user edited — is left alone, and the command refuses with the reason and exit 2.
A file name (``report.md``) proves nothing: a user may have one.

Folders are made with the user's umask (``os.mkdir`` with mode 0o777), never 0700.

Two ways to write:

- ``replace(out, kind, fill)``: ``fill(tmp)`` writes a whole new folder in a temporary
  folder beside ``out``; then the old folder's files are swapped for the new ones. A run that
  is interrupted before the swap leaves the old folder as it was (and no temporary folder); the
  manifest is written last, so a folder is never marked complete while half-written.
- ``Folder(out, kind)``: files added one by one (``write_text``, ``write_with``), each by a
  temporary file and an atomic rename, the manifest updated after each; for a sweep, whose
  cache fills while it runs.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .signals import held

MANIFEST = ".jobsim-manifest.json"
FORMAT = 1


class OutputError(Exception):
    """jobsim will not write where asked: the message names the folder and says why."""


def make_dir(path: Path) -> list[Path]:
    """``mkdir -p`` with the user's umask (``os.mkdir`` applies it to 0o777); the folders it
    made, outermost first (``unmake`` takes them away again if they stayed empty)."""
    path = Path(path)
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    if p.exists() and not p.is_dir():
        raise OutputError(f"cannot make the folder {path}: {p} is a file")
    made = []
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o777)
            made.append(d)
        except FileExistsError:
            if not d.is_dir():
                raise OutputError(f"cannot make the folder {path}: {d} is a file") from None
    return made


def unmake(made: list[Path]) -> None:
    """Remove the folders ``make_dir`` or ``ignored_dir`` made, innermost first, while they
    are empty but for ``ignored_dir``'s own ``.gitignore``: a stopped command leaves none."""
    for d in reversed(made):
        ignore = d / ".gitignore"
        try:
            if ignore.is_file() and not ignore.is_symlink() and \
                    ignore.read_text(encoding="utf-8") == IGNORE_ALL and \
                    [p.name for p in d.iterdir()] == [".gitignore"]:
                ignore.unlink()
            d.rmdir()
        except OSError:
            return  # not empty (something of the user's, or ours to keep): stop there


#: what jobsim writes into a folder of throwaway output it makes (what-if runs, sweeps)
IGNORE_ALL = "# made by jobsim: what-if runs and sweeps, not for version control\n*\n"


def ignored_dir(path: Path) -> list[Path]:
    """Make ``path`` (and its parents) for throwaway output, with a ``.gitignore`` that
    ignores all of it, if it does not exist yet; an existing folder is left as it is. The
    folders it made (for ``unmake``)."""
    path = Path(path)
    if path.exists():
        return []
    made = make_dir(path)
    (path / ".gitignore").write_text(IGNORE_ALL, encoding="utf-8")
    return made


#: digests taken in this process, by the file's identity and last change (a write moves its
#: ctime, which no call can set back; the kernel's clock ticks every few ms, and a user's
#: edit comes later than that): a run checks its folder four times, and reads it once
_DIGESTS: dict[tuple[int, ...], str] = {}


def _key(path: Path) -> tuple[int, ...]:
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def wrote(path: Path, digest: str) -> dict[tuple[int, ...], str]:
    """Remember ``digest`` as the SHA-256 of ``path``, taken while it was written (its
    writer closed it): the manifest need not read it again. Returns the entry, for a child
    process's writer to hand to its parent (``learn``)."""
    entry = {_key(path): digest}
    _DIGESTS.update(entry)
    return entry


def learn(digests: dict[tuple[int, ...], str]) -> None:
    """Digests a child process took of files it wrote (``wrote``)."""
    _DIGESTS.update(digests)


def sha256_of(path: Path) -> str:
    key = _key(path)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def _files_under(folder: Path) -> list[str]:
    """Every file (and symlink) under ``folder``, as sorted POSIX relative paths."""
    out = []
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            rel = Path(root, name).relative_to(folder).as_posix()
            out.append(rel)
    return sorted(out)


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The folder's manifest, None if it has none; OutputError if it is damaged."""
    path = Path(folder) / MANIFEST
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink() or not path.is_file():
        raise OutputError(f"refusing to write into {folder}: its {MANIFEST} is not a "
                          "regular file")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise OutputError(f"refusing to write into {folder}: its {MANIFEST} cannot be read "
                          f"({exc}); if the folder is yours, choose another one") from None
    files = doc.get("files") if isinstance(doc, dict) else None
    if not (isinstance(files, dict) and isinstance(doc.get("kind"), str) and all(
            isinstance(k, str) and isinstance(v, str) and _safe_rel(k)
            for k, v in files.items())):
        raise OutputError(f"refusing to write into {folder}: its {MANIFEST} is not one "
                          "jobsim wrote")
    dirs = doc.get("dirs", [])
    if not (isinstance(dirs, list) and all(isinstance(d, str) and _safe_rel(d)
                                           for d in dirs)):
        raise OutputError(f"refusing to write into {folder}: its {MANIFEST} is not one "
                          "jobsim wrote")
    return doc


def _safe_rel(rel: str) -> bool:
    p = Path(rel)
    return bool(rel) and not p.is_absolute() and ".." not in p.parts and rel != MANIFEST


def _refuse_home(out: Path) -> None:
    resolved = out.resolve()
    cwd = Path.cwd().resolve()
    if resolved == cwd or resolved in cwd.parents:
        raise OutputError(f"refusing to write into {out}: it is the working folder or one of "
                          "its parents; choose a new folder")


def check(out: str | Path, kind: str) -> dict[str, Any] | None:
    """Raise OutputError unless jobsim may write the folder ``out`` of this ``kind``; return
    its manifest (None for a folder that is absent or empty). Nothing is written."""
    out = Path(out)
    _refuse_home(out)
    if out.is_symlink() and not out.exists():
        raise OutputError(f"refusing to write into {out}: it is a dangling symbolic link")
    if not out.exists():
        return None
    if not out.is_dir():
        raise OutputError(f"refusing to write into {out}: a file of that name is in the way")
    manifest = read_manifest(out)
    if manifest is None:
        if any(out.iterdir()):
            raise OutputError(f"refusing to write into {out}: the folder is not empty and "
                              f"jobsim did not write it (it has no {MANIFEST}); choose a new "
                              "folder, or empty this one")
        return None
    if manifest["kind"] != kind:
        raise OutputError(f"refusing to write into {out}: it is a jobsim {manifest['kind']} "
                          f"folder, not a {kind} folder; choose another folder")
    changed = [rel for rel, digest in sorted(manifest["files"].items())
               if (out / rel).is_file() and not (out / rel).is_symlink()
               and sha256_of(out / rel) != digest]
    replaced = [rel for rel in sorted(manifest["files"])
                if (out / rel).is_symlink() or ((out / rel).exists()
                                                and not (out / rel).is_file())]
    if changed or replaced:
        names = ", ".join((changed + replaced)[:5])
        raise OutputError(f"refusing to write into {out}: {names} changed since jobsim wrote "
                          "it; move your copy away or choose another folder")
    return manifest


def _tmp_dir(parent: Path, name: str) -> tuple[Path, list[Path]]:
    """A new temporary folder in ``parent``, and the folders made for it."""
    made = make_dir(parent)
    for _ in range(100):
        path = parent / f".{name}.tmp-{secrets.token_hex(4)}"
        try:
            os.mkdir(path, 0o777)
            return path, made
        except FileExistsError:
            continue
    unmake(made)
    raise OutputError(f"cannot make a temporary folder in {parent}")


def version() -> str:
    """The installed jobsim's version (``unknown`` run from a checkout never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("jobsim")
    except PackageNotFoundError:
        return "unknown"


def _write_manifest(folder: Path, kind: str, files: dict[str, str],
                    dirs: list[str] | tuple[str, ...] = ()) -> None:
    doc = {"format": FORMAT, "kind": kind, "jobsim": version(),
           "files": dict(sorted(files.items())), "dirs": sorted(dirs),
           "note": "written by jobsim: it replaces only the files listed here, and only "
                   "while they hold what it wrote"}
    tmp = folder / f".{MANIFEST}.{os.getpid()}.tmp"
    with held():  # no signal between the two: no manifest's temporary file left behind
        try:
            tmp.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, folder / MANIFEST)
        finally:
            if tmp.exists():
                tmp.unlink()


def replace(out: str | Path, kind: str, fill: Callable[[Path], None]) -> Path:
    """Write the folder ``out`` anew: ``fill(tmp)`` writes every file into a temporary
    folder, then the files jobsim wrote before are swapped for the new ones. Files in ``out``
    that jobsim did not write stay; if a new file would land on one, nothing is changed."""
    out = Path(out)
    check(out, kind)
    tmp, made = _tmp_dir(out.parent, out.name)
    swapped = False
    try:
        fill(tmp)
        new = {rel: sha256_of(tmp / rel) for rel in _files_under(tmp)}
        _write_manifest(tmp, kind, new)
        with held():  # a signal now stops the command after the swap, never half-way
            _swap(out, kind, tmp, new)
            swapped = True
    finally:
        with held():  # the clean-up itself is not cut short
            shutil.rmtree(tmp, ignore_errors=True)
            if not swapped:
                unmake(made)  # the folders made for it, if they stayed empty
    return out


def _swap(out: Path, kind: str, tmp: Path, new: dict[str, str]) -> None:
    """Put the new files (in ``tmp``, with their manifest) in the place of the old."""
    # check again just before the swap: the folder may have changed during a long run
    manifest = check(out, kind)
    if manifest is None:
        if out.exists():
            out.rmdir()  # empty
        os.rename(tmp, out)
        return
    old = manifest["files"]
    present = set(_files_under(out)) - {MANIFEST}
    theirs = present - set(old)
    clash = sorted(theirs & set(new))
    for rel in new:  # a user's file where a new folder goes, or a folder where a file goes
        for parent in Path(rel).parents:
            if parent.as_posix() in theirs:
                clash.append(parent.as_posix())
    if clash:
        raise OutputError(f"refusing to write into {out}: {', '.join(clash[:5])} would "
                          "replace files jobsim did not write; move them away or choose "
                          "another folder")
    for rel in sorted(old):
        p = out / rel
        if p.is_file() and not p.is_symlink():
            p.unlink()
    for rel in sorted(new, key=lambda r: (r.count("/"), r)):
        dest = out / rel
        make_dir(dest.parent)
        os.replace(tmp / rel, dest)
    _remove_empty_dirs(out, {str(Path(r).parent) for r in old})
    os.replace(tmp / MANIFEST, out / MANIFEST)


def _remove_empty_dirs(root: Path, rels: set[str]) -> None:
    for rel in sorted(rels, key=lambda r: -r.count("/")):
        if rel in ("", "."):
            continue
        d = root / rel
        while d != root and d.is_dir() and not d.is_symlink() and not any(d.iterdir()):
            d.rmdir()
            d = d.parent


class Folder:
    """A folder whose files jobsim adds one at a time (a sweep's tables and its cache).

    ``dirs`` are sub-folders jobsim owns whole (a cache: its entries are jobsim's and are
    checked by their own format when read)."""

    def __init__(self, out: str | Path, kind: str, dirs: tuple[str, ...] = ()):
        self.path = Path(out)
        self.kind = kind
        manifest = check(self.path, kind)
        self.files: dict[str, str] = dict(manifest["files"]) if manifest else {}
        self.dirs = tuple(sorted(set(dirs) | set(manifest.get("dirs", []) if manifest
                                                  else ())))
        make_dir(self.path)
        for d in self.dirs:
            make_dir(self.path / d)
        _write_manifest(self.path, kind, self.files, self.dirs)

    def write_with(self, rel: str, writer: Callable[[Path], None]) -> Path:
        """``writer(tmp_path)`` writes the file; it replaces ``rel`` atomically, only if
        ``rel`` is absent or jobsim's."""
        dest = self.path / rel
        if (dest.exists() or dest.is_symlink()) and rel not in self.files:
            raise OutputError(f"refusing to write {dest}: jobsim did not write that file; "
                              "move it away or choose another folder")
        if rel in self.files and dest.is_file() and sha256_of(dest) != self.files[rel]:
            raise OutputError(f"refusing to write {dest}: it changed since jobsim wrote it; "
                              "move your copy away or choose another folder")
        make_dir(dest.parent)
        tmp = dest.parent / f".{dest.name}.{os.getpid()}.tmp"
        try:
            writer(tmp)
            with held():  # the file and its line in the manifest, or neither
                os.replace(tmp, dest)
                self.files[rel] = sha256_of(dest)
                _write_manifest(self.path, self.kind, self.files, self.dirs)
        finally:
            if tmp.exists():
                tmp.unlink()
        return dest

    def write_text(self, rel: str, text: str) -> Path:
        return self.write_with(rel, lambda p: p.write_text(text, encoding="utf-8"))
