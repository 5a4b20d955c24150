"""The command line: a thin shell over the library.

``jobsim run SCENARIO [--out DIR] [--seed N] [--set PATH=VALUE]… [--quiet]`` runs a scenario
(each of its variants), prints its story and a one-screen summary with its expectations,
and writes its run folder with report.md and plots. ``jobsim validate FILE…`` checks scenario
files; ``jobsim view RUN_DIR`` writes a run folder's interactive page; ``jobsim schema``
prints the format as JSON Schema; ``jobsim list`` the shipped
scenarios; ``jobsim bench`` measures the simulator against a bare SimPy M/M/c.

Exit status: 0 all is well; 1 an invariant or an expectation failed; 2 bad input (a scenario
file, a flag), reported without a traceback; 128 + N stopped by signal N (130 Ctrl-C, 143
SIGTERM, 129 SIGHUP), cleaned up as for Ctrl-C (``base.signals``). ``main(argv)`` returns
the status, so tests call it in-process.

The flags are in ``parser`` (their value types in ``values``); each command is in the module
of its concern: ``run`` (run, reports), ``scenarios`` (validate, list, schema), ``sweep``,
``race``, ``bench`` and ``view``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from ..base.errors import ScenarioError
from ..base.printable import PrintableStream, printable
from ..base.signals import stopping_cleanly
from .bench import _bench
from .parser import _parser, _UsageError
from .race import _race
from .new import new as _new
from .run import _reports, _run
from .scenarios import _list, _schema, _validate
from .status import BAD_INPUT, FAILED, OK, stopped
from .sweep import _sweep
from .hunt import _hunt
from .view import _view

__all__ = ["BAD_INPUT", "FAILED", "OK", "entry", "main"]


def main(argv: list[str] | None = None) -> int:
    # every text printed (a name, an error message, a flag's value) has its control
    # characters escaped: none reaches the terminal raw (``base.printable``)
    with _printable_output():
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    if not (sys.argv[1:] if argv is None else argv):  # a bare ``jobsim``: what it can do
        parser.print_help(sys.stderr)
        return BAD_INPUT
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        # a flag the command does not know is argparse's top-level error: its help is the
        # command's (``jobsim run --nope``: jobsim run --help)
        words = sys.argv[1:] if argv is None else argv
        prog, said = exc.prog, str(exc)
        if words and words[0] in parser.commands:
            prog = f"jobsim {words[0]}" if prog == "jobsim" else prog
            if "unrecognized arguments" in said:  # a flag of the command misspelt (--sed)
                close = parser.commands[words[0]].suggestion(list(words[1:]))
                said += f"; {close}" if close else ""
        print(f"{said}\n(run '{prog} --help' for usage)", file=sys.stderr)
        return BAD_INPUT
    # the process's own command line (the console script, ``python -m jobsim``), not a
    # ``main(argv)`` of a test or a notebook: its ``--timings`` count from jobsim's import
    args.as_process = argv is None
    try:
        with stopping_cleanly():  # SIGTERM and SIGHUP clean up as Ctrl-C does
            try:
                return _dispatch(args)
            except ScenarioError as exc:
                print(f"jobsim: {exc.heading()}:", file=sys.stderr)
                print(exc.format(), file=sys.stderr)
                return BAD_INPUT
            except KeyboardInterrupt as exc:  # a command without words of its own for a stop
                return stopped(exc, "nothing half-written was left")
    except KeyboardInterrupt as exc:  # a stop a finalizer held until the command's end
        return stopped(exc, "nothing half-written was left")


@contextmanager
def _printable_output() -> Iterator[None]:
    """Standard output and error through ``base.printable`` for the command's duration."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = PrintableStream(out), PrintableStream(err)
    try:
        yield
    finally:
        try:
            sys.stdout.flush()
        finally:
            sys.stdout, sys.stderr = out, err


def _dispatch(args: argparse.Namespace) -> int:
    commands = {"run": _run, "view": _view, "validate": _validate,
                "schema": lambda _args: _schema(), "list": _list, "reports": _reports,
                "sweep": _sweep, "hunt": _hunt, "race": _race, "new": _new}
    return commands.get(args.command, _bench)(args)


def entry() -> None:
    """The console script."""
    try:
        status = main()
        sys.stdout.flush()
    except KeyboardInterrupt as exc:
        # Ctrl-C before or after ``main`` took over the signals (while importing, say):
        # nothing was being written
        status = stopped(exc, "nothing was written")
    except BrokenPipeError:
        # The reader (``| head``) went away: not an error of ours, and no traceback.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = OK
    except Exception as exc:  # a bug of jobsim's: its traceback, escaped like all it prints
        import traceback

        text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        sys.stderr.write(printable(text, lines=True))
        status = 1
    sys.exit(status)
