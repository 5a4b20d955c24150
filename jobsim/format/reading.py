"""Reading a scenario file: YAML text → a plain document, before it is checked as a scenario.

The file is read with a safe loader after a walk that refuses duplicate keys; nothing in it is
executed. Sizes are bounded, so a typo cannot exhaust memory: the file's bytes, the number of
YAML values with aliases expanded, the digits of an integer, the depth of nesting.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from ..base.errors import Problem, ScenarioError
from .spec import join, show

MAX_FILE_BYTES = 4 * 1024 ** 2  # a scenario file is a page or two; 4 MB is far beyond any
MAX_NODES = 200_000  # YAML nodes after alias expansion: refuses "billion laughs" documents


class _TooBig(Exception):
    pass


def shipped_folder() -> Path | None:
    """The folder of the scenarios that come with jobsim: the checkout's ``scenarios/`` (a
    checkout, or an editable install), else the copy an install puts in its data folder
    (``share/jobsim/scenarios``); None if neither is there."""
    import sysconfig

    candidates = [Path(__file__).resolve().parents[2] / "scenarios"]
    for scheme in (None, f"{os.name}_user"):
        try:
            data = sysconfig.get_path("data", scheme) if scheme else sysconfig.get_path("data")
        except KeyError:
            continue
        candidates.append(Path(data) / "share" / "jobsim" / "scenarios")
    for folder in candidates:
        if (folder / "lesson.yaml").is_file():
            return folder
    return None


def _shipped_hint(path: Path) -> str:
    """For a file that is not there: the shipped scenario of that name, if there is one."""
    folder = shipped_folder()
    if folder is None or len(path.parts) > 2:
        return ""
    name = path.name if path.suffix == ".yaml" else f"{path.name}.yaml"
    there = folder / name
    if there.is_file():
        return f"a shipped scenario has that name: {there} (jobsim list shows them all)"
    return ""


def _key_problems(node: yaml.Node, path: str, problems: list[Problem],
                  budget: list[int]) -> None:
    """Walk the composed YAML: duplicate keys, keys that are not plain scalars, and a node
    budget (aliases expanded) so that a document cannot explode."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            mark = key_node.start_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(Problem(path or "(top level)", "plain keys (names)",
                                        f"a {key_node.id} used as a key at {where}"))
                continue
            key = key_node.value
            if key in seen:
                problems.append(Problem(join(path, key), "each key once in its mapping",
                                        f"duplicate key {key!r} at {where}"))
            seen.add(key)
            _key_problems(value_node, join(path, key), problems, budget)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _key_problems(item, join(path, i), problems, budget)
    elif node.tag == "tag:yaml.org,2002:int" and len(node.value) > 30:
        problems.append(Problem(path or "(top level)", "an integer of at most 30 digits",
                                show(node.value)))


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read(path: str | Path) -> Any:
    """Read a scenario file into a plain document (checked as YAML, not yet as a scenario)."""
    path = Path(path)
    source = str(path)
    try:
        # O_NONBLOCK: a FIFO with no writer must not hang the open; then only a regular file
        # of at most MAX_FILE_BYTES is read (not /dev/zero, not a pipe, not a socket)
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ScenarioError([Problem("", "an existing scenario file", "no such file",
                                     _shipped_hint(path))], source) from None
    except IsADirectoryError:
        raise ScenarioError([Problem("", "a scenario file", "a directory")], source) from None
    except OSError as exc:
        raise ScenarioError([Problem("", "a readable scenario file", exc.strerror or str(exc))],
                            source) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ScenarioError([Problem("", "a scenario file", "a directory")], source)
        if not stat.S_ISREG(st.st_mode):
            raise ScenarioError([Problem("", "a regular file", _file_kind(st.st_mode))], source)
        if st.st_size > MAX_FILE_BYTES:
            raise ScenarioError([Problem("", f"a scenario file of at most "
                                         f"{MAX_FILE_BYTES // 1024 ** 2} MB",
                                         f"{st.st_size:,} bytes")], source)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise ScenarioError([Problem("", f"a scenario file of at most "
                                         f"{MAX_FILE_BYTES // 1024 ** 2} MB", "more")], source)
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError([Problem("", "a readable UTF-8 text file", str(exc))],
                            source) from None
    except OSError as exc:
        raise ScenarioError([Problem("", "a readable scenario file", exc.strerror or str(exc))],
                            source) from None
    finally:
        os.close(fd)
    return parse(text, source)


def parse(text: str, source: str = "<scenario>") -> Any:
    """YAML text → document, with duplicate keys, odd keys and alias bombs refused."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        problems: list[Problem] = []
        if root is not None:
            try:
                _key_problems(root, "", problems, [MAX_NODES])
            except _TooBig:
                raise ScenarioError([Problem("", f"a document of at most {MAX_NODES:,} values "
                                             "(aliases expanded)", "more: an alias bomb?")],
                                    source) from None
        if problems:
            raise ScenarioError(problems, source)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([Problem(where, "valid YAML", str(problem))], source) from None
    except RecursionError:
        raise ScenarioError([Problem("", "a document nested a few levels deep",
                                     "nesting too deep to read (brackets or indentation "
                                     "hundreds of levels deep)")], source) from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of thousands of digits
        raise ScenarioError([Problem("", "values of a sensible size", str(exc)[:120])],
                            source) from None
