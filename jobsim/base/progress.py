"""Progress where the user is, drawn by tqdm.

In a notebook with ipywidgets, a widget; on a terminal, a bar on stderr; when stderr is not a
terminal (a CI log, a pipe), a plain line every ``log_every`` seconds rather than a stream of
carriage returns. ``JOBSIM_PROGRESS=0`` turns it off; ``=1`` forces it on.

``Bar.stage(text)`` says what happens after the bar is full (analysis, the report) so that a
long tail does not look like a hang; in a log it is a line of its own at once, whatever the
run's length, so that a log shows every phase. ``Steps`` is work in named steps whose number
is not known ahead (a report's files): a bar naming the step under way, or in a log a line as
each step begins. The counts shown are whole numbers. In a notebook a widget stays in its
cell in its last state, red where the work failed or was stopped.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

from .printable import printable, stream_of


class _Lines:
    """A stream for tqdm that turns its redraws into whole lines (for logs)."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def write(self, text: str) -> int:
        text = text.replace("\r", "").replace("\x1b[A", "")
        if text.strip():
            self.stream.write(text.rstrip("\n") + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def _screen(stream: Any) -> dict[str, Any]:
    """tqdm's size settings for the terminal ``stream``: its own (``dynamic_ncols``), unless
    the terminal says it has no rows or no columns (a pseudo-terminal never sized: ``script``,
    some CI runners). tqdm then takes the screen as -1 rows high and hides every bar, so the
    run showed no progress at all: a fixed size instead, 24 rows of its columns (or 80)."""
    try:
        columns, lines = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a real terminal (a test's stream)
        return {"dynamic_ncols": True}
    if columns > 0 and lines > 0:
        return {"dynamic_ncols": True}
    return {"ncols": columns if columns > 0 else 80, "nrows": 24}


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - IPython's own failure means: not a notebook
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


#: what ``JOBSIM_PROGRESS`` may say to turn progress off (any case)
OFF = ("", "0", "false", "no", "off")


def enabled(default: bool = True) -> bool:
    flag = os.environ.get("JOBSIM_PROGRESS")
    if flag is not None:
        return flag.strip().lower() not in OFF
    return default


class Bar:
    """A progress bar over ``total`` steps of ``unit``; ``set(n)`` moves it to ``n``."""

    def __init__(self, total: float, desc: str, unit: str = "it", *, show: bool = True,
                 stream: IO[str] | None = None, log_every: float = 10.0,
                 scale: float | None = None):
        self.bar: Any = None
        self.desc = desc = printable(desc)  # a name: its control characters escaped
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if self.tty:  # the bar's carriage returns are its own: beneath an escaping stream
            self.stream = stream_of(self.stream)
        self.started = time.monotonic()
        self.log_every = log_every
        if not (show and enabled()):
            return
        kwargs: dict[str, Any] = dict(total=total, desc=desc, unit=unit, leave=False,
                                      **(_screen(stream or sys.stderr) if self.tty else {}))
        if scale is not None:
            kwargs["unit_scale"] = scale
        if unit == "%":  # a share of a whole: no rate (``154.43%/s`` says nothing)
            kwargs["bar_format"] = "{desc}: {n_fmt}%|{bar}| [{elapsed}<{remaining}{postfix}]"
        self.bar = _notebook_bar(kwargs)
        if self.bar is not None:
            return
        from tqdm import tqdm

        if self.tty:
            self.bar = tqdm(file=self.stream, mininterval=0.2, **kwargs)
        else:
            kwargs["leave"] = True
            # a log gets lines only from work long enough to need them
            self.bar = tqdm(file=_Lines(self.stream), mininterval=log_every,
                            maxinterval=log_every, delay=log_every, ascii=True, ncols=100,
                            **kwargs)

    def set(self, n: float, postfix: str | None = None) -> None:
        if self.bar is None:
            return
        # whole steps of a whole total: tqdm prints the count as given (33.879999999999995/100)
        n = min(max(n, 0.0), self.total)
        if isinstance(self.total, int):
            n = int(n)
        if postfix is not None:
            self.bar.set_postfix_str(printable(postfix), refresh=False)
        self.bar.update(n - self.bar.n)

    def stage(self, text: str) -> None:
        """What happens now: before the count begins, what the counted work is; once it
        has begun, what follows it (the count is done)."""
        if self.bar is None:
            return
        text = printable(text)
        if not self.tty and not _is_widget(self.bar):  # a log: a line per phase, in order
            if self.bar.n > 0:
                # the count's last line (if it showed any) before the next phase's, under
                # its own postfix: else it came at ``close``, after that phase, naming it
                self.bar.close()
            self.stream.write(f"{self.desc}: {text}\n")
            self.stream.flush()
            return
        self.bar.set_postfix_str(text, refresh=self.tty or _is_widget(self.bar))

    def close(self) -> None:
        if self.bar is not None:
            _close(self.bar)
            self.bar = None

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def simulating(sc: Any) -> str:
    """What a run (a ``Scenario``) simulates, in a few words: its jobs and how long."""
    jobs = sc.job_count
    until = "until drained" if sc.until is None else f"for {sc.until:,.0f} s"
    return f"simulating {jobs:,} jobs {until}" if jobs else f"simulating {until}"


def run_progress(bar: Bar) -> Any:
    """A run's ``progress(fraction, now, unit="s")`` (``sim.world.run``) drawn on ``bar``, a
    share in %: the simulated time beside it (or the count a run until drained tells)."""
    return lambda f, t, unit="s": bar.set(100 * f, f"t={t:,.0f}s" if unit == "s" else
                                          f"{t:,.0f} {unit}")


def _notebook_bar(kwargs: dict[str, Any]) -> Any:
    """tqdm's widget in a notebook (None elsewhere, or without ipywidgets: text then),
    left in the cell once closed, in its last state (``_close``), as a log keeps its last
    line: closed as tqdm hides it, it kept a label drawn up to 0.1 s before the end ("98%",
    a time short of the run's end) beside a full bar.

    Without ipywidgets, tqdm's notebook bar fails half-way through its making, and the
    half-made bar's ``__del__`` printed a traceback into the cell ("'tqdm_notebook' object
    has no attribute 'disp'"): ipywidgets is asked for first, through tqdm's own import
    of it."""
    if not _in_notebook():
        return None
    try:
        from IPython.display import display
        from tqdm import notebook

        if getattr(notebook, "IProgress", None) is None:  # tqdm found no ipywidgets
            return None
        bar = notebook.tqdm(**{**kwargs, "leave": True}, display=False)
        # shown here, under a handle: ``_close`` shows it again in its last state
        bar.jobsim_shown = display(bar.container, display_id=True)
        bar.displayed = True
        return bar
    except Exception:  # noqa: BLE001 - an ipywidgets tqdm cannot use: fall back to text
        return None


def _close(bar: Any) -> None:
    """Close tqdm's ``bar``; a widget is shown again as it ends. A saved notebook keeps, for
    whoever reads it without the widgets (GitHub, nbconvert), the text the widget had when
    it was shown ("0%"): shown again, the cell keeps the last state as text too."""
    bar.close()
    shown = getattr(bar, "jobsim_shown", None)
    if shown is not None:
        try:
            shown.update(bar.container)
        except Exception:  # noqa: BLE001 - the widget stays as it was drawn
            pass


def _is_widget(bar: Any) -> bool:
    return type(bar).__module__.startswith("tqdm.notebook")


class Steps:
    """Work in named steps whose number is not known ahead (a report's files): on a terminal
    or in a notebook a bar naming the step under way and the time so far; in a log
    (``stream`` not a terminal) a line ``desc: what`` as each step begins; nothing when
    ``show`` is false or ``JOBSIM_PROGRESS=0``. ``close(text)`` ends it, saying ``text``.

    No count of the steps is shown: a report's steps are not its files (two CSV files are
    one step, summary.json and scenario.yaml none), and a count of them ("file 10") stood
    beside a closing line that counts the files ("12 files written")."""

    def __init__(self, desc: str, unit: str = "files", *, show: bool = True,
                 stream: IO[str] | None = None):
        self.desc = printable(desc)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar: Any = None
        self.lines = False
        if not (show and enabled()):
            return
        kwargs: dict[str, Any] = dict(desc=self.desc, unit=unit, leave=False, total=None,
                                      bar_format="{desc} [{elapsed}]")
        self.bar = _notebook_bar(kwargs)
        if self.bar is not None:
            return
        if self.tty:
            from tqdm import tqdm

            self.bar = tqdm(file=stream_of(self.stream), mininterval=0.2,
                            **_screen(self.stream), **kwargs)
        else:
            self.lines = True

    def step(self, what: str, n: int = 1) -> None:
        """The next step begins: ``what`` it does, ``n`` of the unit (two files, say)."""
        what = printable(what)
        if self.lines:
            self.stream.write(f"{self.desc}: {what}\n")
            self.stream.flush()
        elif self.bar is not None:
            self.bar.set_description_str(f"{self.desc}: {what}", refresh=False)
            self.bar.update(n)
            # drawn now: ``update`` draws only ``mininterval`` after the last drawing, and a
            # step begun sooner (trace.csv, a second after the page) stood unnamed under
            # the last one's name (or "file 0") for all the seconds it took
            self.bar.refresh()

    def close(self, text: str | None = None, failed: bool = False) -> None:
        """The bar goes; ``text``, if any, stays as a line (in a log and on a terminal), or
        in a notebook as the widget's last words; a widget stays red where the work
        ``failed`` (or was stopped): with no total, tqdm would show it done."""
        shown = self.lines or self.bar is not None
        if self.bar is not None:
            widget = _is_widget(self.bar)
            if widget and failed:
                self.bar.disp(bar_style="danger", check_delay=False)
            if widget and text:  # its own words, without the time beside them again
                self.bar.set_description_str(f"{self.desc}: {printable(text)}", refresh=False)
                self.bar.bar_format = "{desc}"
                shown = False  # said by the widget itself
            _close(self.bar)
            self.bar = None
        if shown and text:
            self.stream.write(f"{self.desc}: {printable(text)}\n")
            self.stream.flush()
        self.lines = False

    def __enter__(self) -> "Steps":
        return self

    def __exit__(self, kind: Any, *exc: object) -> None:
        """Closed, if it was not: red in a notebook where the work failed or was stopped."""
        self.close(failed=kind is not None)


def step(steps: Steps | None, what: str, n: int = 1) -> None:
    """``steps.step(what, n)``, or nothing when there are no steps to tell."""
    if steps is not None:
        steps.step(what, n)
