"""What a run is given as, and what it is shown from: the public API takes the natural thing
and these say which part a value stands for. A run is asked for by a ``Scenario``, a
scenario file's path or a parsed document (``as_scenario``); what is shown of it by a
``RunResult`` (what ``run`` returns) or an ``Analysis`` (what ``analyse`` returns, known
here by its ``result`` and ``histories``), or by the part itself: a ``Trace``
(``as_trace``), a ``Histories`` (``as_histories``). Anything else is refused with the types
accepted named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.trace import Trace
from ..executor.config import Scenario
from ..format import scenario as _scenario
from . import history as _history
from . import stories as _stories

__all__ = ["as_histories", "as_scenario", "as_trace"]


def _kind(value: Any) -> str:
    return type(value).__name__ + (f" {value!r}"[:60] if isinstance(value, (str, Path)) else "")


def as_scenario(what: Any) -> Scenario:
    """A ``Scenario`` from itself, a scenario file's path (its base run; ``load_variants``
    gives its variants) or a parsed document (a dict)."""
    if isinstance(what, Scenario):
        return what
    if isinstance(what, (str, Path)):
        return _scenario.load(what)
    if isinstance(what, dict):
        return _scenario.from_dict(what)
    raise TypeError(f"expected a Scenario, a scenario file's path or a scenario document "
                    f"(a dict); got {_kind(what)}")


def as_trace(what: Any) -> Trace:
    """The ``Trace`` of a ``RunResult``, of an ``Analysis``, or itself."""
    if isinstance(what, Trace):
        return what
    result = getattr(what, "result", None)  # an Analysis
    trace = getattr(result if result is not None else what, "trace", None)
    if isinstance(trace, Trace):
        return trace
    raise TypeError(f"expected a RunResult (from jobsim.run), an Analysis (from "
                    f"jobsim.analyse) or a Trace; got {_kind(what)}")


def as_histories(what: Any) -> Any:
    """The job histories of an ``Analysis`` (its own), of a ``RunResult`` or a ``Trace``
    (made from its trace), or a ``Histories`` itself."""
    if isinstance(what, _stories.Histories):
        return what
    hist = getattr(what, "histories", None)
    if isinstance(hist, _stories.Histories):
        return hist
    try:
        return _history.histories(as_trace(what))
    except TypeError:
        raise TypeError(f"expected a RunResult (from jobsim.run), an Analysis (from "
                        f"jobsim.analyse), a Trace or a Histories; got {_kind(what)}") from None
