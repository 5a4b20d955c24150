"""Errors a user can cause, and the one a run can reveal.

A ``ScenarioError`` carries every problem found in an input at once, each with the file, the
dotted path inside it, what was expected and what came. The CLI prints them and exits with
status 2; nothing else in jobsim prints or exits.
"""

from __future__ import annotations

from dataclasses import dataclass


class JobsimError(Exception):
    """Base class of jobsim's own errors."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: where it is, what was expected, what came."""

    path: str
    expected: str
    got: str = ""
    hint: str = ""

    @property
    def flag(self) -> bool:
        """Whether the problem is a command-line flag's (its path ``--plot``, ``--grid
        executor.threads``): said without the file's name, which is not where it is."""
        return self.path.startswith("--")

    def format(self, source: str | None = None) -> str:
        where = f"{source}: " if source and source != COMMAND_LINE and not self.flag else ""
        where += self.path or "(top level)"
        text = f"{where}: expected {self.expected}"
        if self.got:
            text += f" (got {self.got})"
        if self.hint:
            text += f"; {self.hint}"
        return text


#: the source of a problem found in a flag before any file was read
COMMAND_LINE = "the command line"


class ScenarioError(JobsimError):
    """One or more problems in a scenario file or an override, reported together."""

    def __init__(self, problems: list[Problem], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        # the args rebuild it: SimPy raises a process's exception again as
        # ``type(e)(*e.args)``, and pickling (Dask) does the same
        super().__init__(self.problems, source)

    def __str__(self) -> str:
        return self.format()

    def format(self) -> str:
        return "\n".join(p.format(self.source) for p in self.problems)

    def heading(self) -> str:
        """The line above the problems: where they are (the file, or the command line's
        flags for it)."""
        n = len(self.problems)
        if self.source in (None, COMMAND_LINE):
            return f"{n} problem(s) on the command line"
        if all(p.flag for p in self.problems):
            return f"{n} problem(s) on the command line (for {self.source})"
        return f"{n} problem(s) in {self.source}"

    def with_source(self, source: str) -> "ScenarioError":
        return ScenarioError(self.problems, source)

