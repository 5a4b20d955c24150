"""Text from a scenario or a user — a name, an error message, a path — as it may be shown
on a terminal or written into a file: with its control characters escaped.

A node, handler, service, job, stream or queue may be named anything a YAML string holds,
``"n\\e]0;pwned\\a"`` among them: printed as it is, such a name drives the terminal (an OSC
sequence retitles it, others move the cursor, rewrite lines, hide text); written into a CSV
file or a report, it does the same to whoever ``cat``s it. ``printable`` writes each such
character as the escape ``\\u001b`` — a JSON escape too, so the same text serves an
interactive page's data — and leaves every other character as it is: ``café``, ``注文``
and ``🙂`` stay themselves.

Escaped: the C0 controls (``\\n`` and ``\\t`` kept in a text of lines, ``lines=True``),
DEL, the C1 controls, and the Unicode characters that reorder or break lines on display
(U+2028, U+2029, the bidirectional embeddings, overrides and isolates).

``PrintableStream`` is a text stream that writes everything through ``printable``: the
command line wraps its standard output and error in one (``stream_of`` gives a progress bar
the stream beneath, whose carriage returns are its own).
"""

from __future__ import annotations

import re
from typing import IO, Any

_BIDI_AND_LINES = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
_ANY = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_LINES}]")
_IN_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_LINES}]")


def _escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def printable(text: str, lines: bool = False) -> str:
    """``text`` with every control character written as its escape (``\\u001b``);
    ``lines``: a text of lines (a report, what a command prints), whose newlines and tabs
    stay."""
    pattern = _IN_LINES if lines else _ANY
    if pattern.search(text) is None:  # the common case: nothing to do, no copy
        return text
    return pattern.sub(_escape, text)


class PrintableStream:
    """A text stream writing ``printable(text, lines=True)`` to ``raw``; anything else
    (``flush``, ``isatty``, ``fileno``, ``encoding``) is ``raw``'s."""

    def __init__(self, raw: IO[str]):
        self.raw = raw

    def write(self, text: str) -> int:
        self.raw.write(printable(text, lines=True))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def stream_of(stream: Any) -> Any:
    """The stream beneath a ``PrintableStream`` (for a progress bar's own control
    characters), else ``stream`` itself."""
    return stream.raw if isinstance(stream, PrintableStream) else stream
