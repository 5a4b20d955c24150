"""Reading a scenario file: YAML text → a plain document, before it is checked as a scenario.

The file is read with a safe loader after a walk that refuses duplicate keys; nothing in it is
executed. Sizes are bounded, so a typo cannot exhaust memory: the file's bytes, the number of
YAML values with aliases expanded, the digits of an integer, the depth of nesting.
"""

from __future__ import annotations

import datetime
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

from ..base.errors import Problem, ScenarioError
from .spec import join, show

MAX_FILE_BYTES = 4 * 1024 ** 2  # a scenario file is a page or two; 4 MB is far beyond any
MAX_NODES = 200_000  # YAML nodes after alias expansion: refuses "billion laughs" documents


#: values nested at most this deep (a scenario nests about six levels)
MAX_DEPTH = 100
#: the digits of an integer (a count, a seed): more is a typo, and costly to convert
MAX_INT_DIGITS = 30
_TOO_DEEP = ("a document nested a few levels deep",
             f"nesting too deep (more than {MAX_DEPTH} levels of brackets or indentation)")


class _TooBig(Exception):
    """More values than ``MAX_NODES``; the entry where the count ran out."""


class _TooDeep(Exception):
    """Nesting beyond ``MAX_DEPTH``, at the path given."""


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


#: a path inside a document as a linked list, (parent, step): made into text only when shown
_Link = tuple[Any, Any] | None


def _steps(link: _Link) -> list[Any]:
    steps = []
    while link is not None:
        link, step = link
        steps.append(step)
    return steps[::-1]


def _dotted(steps: list[Any]) -> str:
    """The dotted path of ``steps`` (long keys shortened, at most 12 steps)."""
    path = ""
    for step in steps[:12]:
        if not (isinstance(step, int) and not isinstance(step, bool)):
            step = str(step) if isinstance(step, str) else show(step)
            step = step if len(step) <= 40 else step[:37] + "..."
        path = join(path, step)
    return path + ("…" if len(steps) > 12 else "")


def _culprit(link: _Link) -> str:
    """Where a document ran out of its budget, as the entry a user wrote: a variant's
    ``set`` entry (``variants.x.set.workload.jobs``), else the top-level key."""
    steps = _steps(link)
    if len(steps) >= 4 and steps[0] == "variants" and steps[2] == "set":
        return _dotted(steps[:4])
    return _dotted(steps[:1])


def _node_problems(root: yaml.Node, where: str, problems: list[Problem]) -> None:
    """Walk the composed YAML: duplicate keys, keys that are not plain scalars, integers of
    too many digits, nesting too deep, and a node budget (aliases expanded, each alias counted
    every time it is reached) so that a document cannot explode. ``where`` prefixes the
    paths (``--set executor`` for a value given on the command line). Iterative, and no
    path is made into text unless it is shown: the walk costs one step per value."""
    left = MAX_NODES
    stack: list[tuple[yaml.Node, _Link, int]] = [(root, None, 1)]
    while stack:
        node, link, depth = stack.pop()
        left -= 1
        if left < 0:
            raise _TooBig(_at(where, _culprit(link)))
        if depth > MAX_DEPTH:
            raise _TooDeep(_at(where, _dotted(_steps(link))))
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            children = []
            for key_node, value_node in node.value:
                mark = key_node.start_mark
                at = f"line {mark.line + 1}, column {mark.column + 1}"
                if not isinstance(key_node, yaml.ScalarNode):
                    problems.append(Problem(_at(where, _dotted(_steps(link))),
                                            "plain keys (names)",
                                            f"a {key_node.id} used as a key at {at}"))
                    continue
                key = key_node.value
                if key in seen:
                    problems.append(Problem(_at(where, _dotted(_steps((link, key)))),
                                            "each key once in its mapping",
                                            f"duplicate key {show(key)} at {at}"))
                seen.add(key)
                children.append((value_node, (link, key), depth + 1))
            stack.extend(reversed(children))  # in the document's order
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(item, (link, i), depth + 1)
                                   for i, item in enumerate(node.value)]))
        elif node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_DIGITS:
            problems.append(Problem(_at(where, _dotted(_steps(link))),
                                    f"an integer of at most {MAX_INT_DIGITS} digits",
                                    show(node.value)))


def _at(where: str, path: str) -> str:
    """A path inside a value given at ``where`` (``--set executor → lock_time``)."""
    if not where:
        return path or "(top level)"
    return f"{where} → {path}" if path else where


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
    if len(text) > MAX_FILE_BYTES:
        raise ScenarioError([Problem("", f"a scenario of at most "
                                     f"{MAX_FILE_BYTES // 1024 ** 2} MB of text",
                                     f"{len(text):,} characters")], source)
    return _load(text, source, "")


def parse_value(text: str, where: str, source: str) -> Any:
    """One value given as YAML text (a ``--set`` value, a ``--grid`` value), held to a
    file's limits; ``where`` names it in an error (``--set executor``). Text that is not
    YAML stays text, as before: ``--set description=a: b`` sets that string."""
    if len(text) > MAX_FILE_BYTES:
        raise ScenarioError([Problem(where, f"a value of at most "
                                     f"{MAX_FILE_BYTES // 1024 ** 2} MB of text",
                                     f"{len(text):,} characters")], source)
    if not text.strip():
        return ""
    return _load(text, source, where, not_yaml=text)


_NOT_GIVEN = object()


def _load(text: str, source: str, where: str, not_yaml: Any = _NOT_GIVEN) -> Any:
    """Compose ``text``, walk it with the budget, and only then construct it (one parse);
    text that is not YAML is ``not_yaml`` if given, else an error."""
    loader = None
    try:
        try:
            loader = yaml.SafeLoader(text)  # it refuses a text with control characters
            root = loader.get_single_node()
        except yaml.YAMLError:
            if not_yaml is _NOT_GIVEN:
                raise
            return not_yaml
        problems: list[Problem] = []
        if root is not None:
            try:
                _node_problems(root, where, problems)
            except _TooBig as exc:
                raise ScenarioError([Problem(str(exc), f"at most {MAX_NODES:,} values in "
                                             f"the {'value' if where else 'document'} "
                                             "(aliases expanded)", "more: an alias bomb?")],
                                    source) from None
            except _TooDeep as exc:
                raise ScenarioError([Problem(str(exc), *_TOO_DEEP)], source) from None
        if problems:
            raise ScenarioError(problems, source)
        return None if root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ScenarioError([Problem(_at(where, at) if at else where, "valid YAML",
                                     str(problem))], source) from None
    except RecursionError:
        raise ScenarioError([Problem(where, "a document nested a few levels deep",
                                     "nesting too deep to read (brackets or indentation "
                                     "hundreds of levels deep)")], source) from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of thousands of digits
        raise ScenarioError([Problem(where, "values of a sensible size", str(exc)[:120])],
                            source) from None
    finally:
        if loader is not None:
            loader.dispose()


# --- a document given as Python values ---------------------------------------------------------

#: the values a YAML file can hold besides mappings and sequences
_SCALARS = (str, int, float, bool, type(None), bytes, datetime.date)
_END = object()


def _children(value: Any) -> Iterator[tuple[str | int, Any]]:
    if isinstance(value, dict):
        return iter(value.items())
    return enumerate(value)


def check_document(doc: Any, source: str, where: str = "") -> None:
    """Refuse a document given as Python values (a dict of the API, a document with
    ``--set`` values in it) that no scenario file within the limits could be: more than
    ``MAX_NODES`` values (a value reached by several references is counted each time it is
    reached, as an alias is), nesting deeper than ``MAX_DEPTH``, a value that contains
    itself, keys that are not plain scalars, a string longer than a file, an integer of more
    than ``MAX_INT_DIGITS`` digits. Nothing is copied and nothing is shown whole: the walk
    stops where the budget runs out. ``where`` prefixes the paths."""
    problems: list[Problem] = []
    left = MAX_NODES
    # each frame: the container's children still to walk, its id, its path
    frames: list[tuple[Iterator[tuple[Any, Any]], int, _Link]] = []
    on_path: set[int] = set()
    todo: list[tuple[Any, _Link]] = [(doc, None)]
    while todo or frames:
        if todo:
            value, link = todo.pop()
            left -= 1
            if left < 0:
                raise ScenarioError([Problem(_at(where, _culprit(link)), f"a document of at "
                                             f"most {MAX_NODES:,} values (a value reached by "
                                             "several references counted each time)",
                                             "more: a value shared or repeated too often?")],
                                    source)
            if len(frames) >= MAX_DEPTH:
                raise ScenarioError([Problem(_at(where, _dotted(_steps(link))), *_TOO_DEEP)],
                                    source)
            if isinstance(value, (dict, list, tuple, set, frozenset)):
                if id(value) in on_path:
                    problems.append(Problem(_at(where, _dotted(_steps(link))),
                                            "a document without cycles",
                                            "a value that contains itself"))
                else:
                    on_path.add(id(value))
                    frames.append((_children(value), id(value), link))
            else:
                _leaf_problem(value, lambda: _at(where, _dotted(_steps(link))), problems)
            continue
        it, ident, link = frames[-1]
        nxt = next(it, _END)
        if nxt is _END:
            frames.pop()
            on_path.discard(ident)
            continue
        key, child = nxt
        if not _plain_key(key):
            problems.append(Problem(_at(where, _dotted(_steps(link))), "plain keys (names)",
                                    f"a {type(key).__name__} used as a key"))
            continue
        if isinstance(key, str) and len(key) > MAX_FILE_BYTES:
            problems.append(Problem(_at(where, _dotted(_steps(link))),
                                    "keys of a sensible size",
                                    f"a key of {len(key):,} characters"))
            continue
        todo.append((child, (link, key)))
    if problems:
        raise ScenarioError(problems, source)


def _plain_key(key: Any) -> bool:
    return isinstance(key, (str, int, float, bool, type(None), datetime.date))


def _leaf_problem(value: Any, path: Callable[[], str], problems: list[Problem]) -> None:
    if isinstance(value, str) and len(value) > MAX_FILE_BYTES:
        problems.append(Problem(path(), f"a string of at most "
                                f"{MAX_FILE_BYTES // 1024 ** 2} MB, as in a file",
                                f"{len(value):,} characters"))
    elif isinstance(value, int) and not isinstance(value, bool) and \
            abs(value) >= 10 ** MAX_INT_DIGITS:
        digits = int(value.bit_length() * 0.30103) + 1  # str() of a huge int is refused
        problems.append(Problem(path(), f"an integer of at most {MAX_INT_DIGITS} digits",
                                f"about {digits:,} digits"))
