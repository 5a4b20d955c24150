"""CSV files written column by column, with no Python step per row.

The files are byte for byte what ``pandas.DataFrame.to_csv(index=False)`` wrote before (the
reports are committed, and their bytes are part of what a run is): a header line, ``,``
between fields, ``\\n`` after each row, and

- integers as Arrow writes them (``-1``, ``42``); booleans ``True`` / ``False``;
- floats as Python's ``repr`` spells them (``0.0``, ``0.1``, ``1e-05``, ``inf``), NaN empty.
  Arrow's cast gives the same shortest digits but its own layout (``300``, ``0.00001``,
  ``2.5e-7``): a whole number gets its ``.0``, and the few values whose layout differs (an
  exponent on one side only) are spelled by ``repr`` itself;
- texts quoted as the ``csv`` module quotes them (pandas' writer): only a field with a ``,``,
  a ``"`` or a line break, its quotes doubled; None and NaN empty. A text column is
  factorized, and each distinct value is quoted once, its control characters escaped first
  (``base.printable``: a name cannot drive the terminal of whoever reads the file).

Each column becomes an Arrow string array; a block of rows at a time is joined into lines
(``pyarrow.compute``) and written, so memory stays near one block's text.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..base import outdir
from ..base.printable import printable

#: rows formatted and written at a time (a block's text is a few tens of MB)
BLOCK = 1 << 17


def quoted(values: Sequence[Any]) -> list[str]:
    """Each value as the ``csv`` module writes a field (None and NaN: empty)."""
    out = []
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            out.append("")
            continue
        text = printable(str(v))  # a name's control characters escaped
        if text == "":
            out.append("")
            continue
        buf.seek(0)
        buf.truncate()
        writer.writerow([text])
        out.append(buf.getvalue()[:-1])
    return out


def _patch(s: pa.Array, mask: np.ndarray, values: pa.Array | str) -> pa.Array:
    """``s`` with the rows of ``mask`` replaced by ``values`` (one per masked row, or one
    for all)."""
    if isinstance(values, str):
        values = pa.array([values] * int(mask.sum()), pa.string())
    return pc.replace_with_mask(s, pa.array(mask), values)


#: a float column is spelled value by value unless a run of equal neighbours leaves at most
#: this share of its values to spell (a trace's times: a third of them)
RUNS_SHARE = 0.75


def float_text(x: np.ndarray) -> pa.Array:
    """Floats as ``repr`` spells them, NaN empty. Where many values equal the one before
    (a trace's times, a column of mostly NaN), each run is spelled once and repeated."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    if len(x) > 1:
        bits = x.view(np.int64)  # bit for bit: -0.0 is not 0.0, each NaN like itself
        first = np.empty(len(x), dtype=bool)
        first[0] = True
        np.not_equal(bits[1:], bits[:-1], out=first[1:])
        runs = int(np.count_nonzero(first))
        if runs <= RUNS_SHARE * len(x):
            return _spelled(x[first]).take(pa.array(np.cumsum(first) - 1))
    return _spelled(x)


def _spelled(x: np.ndarray) -> pa.Array:
    s = pc.cast(pa.array(x), pa.string())
    finite = np.isfinite(x)
    ax = np.abs(x)
    python_e = finite & (x != 0) & ((ax < 1e-4) | (ax >= 1e16))  # repr uses an exponent
    arrow_e = pc.match_substring(s, "e").to_numpy(zero_copy_only=False)
    odd = finite & (python_e | arrow_e)
    whole = finite & ~odd & (np.floor(x) == x)
    if whole.any():
        s = _patch(s, whole, pc.binary_join_element_wise(s.filter(pa.array(whole)), ".0", ""))
    nan = np.isnan(x)
    if nan.any():
        s = _patch(s, nan, "")
    if odd.any():
        s = _patch(s, odd, pa.array([repr(v) for v in x[odd].tolist()], pa.string()))
    return s


def coded_text(codes: np.ndarray, names: Sequence[str]) -> pa.Array:
    """Codes into ``names`` (-1: empty) as the texts, each name quoted once."""
    table = pa.array(quoted(list(names)) + [""], pa.string())
    ix = np.where(codes < 0, len(names), codes).astype(np.int64, copy=False)
    return table.take(pa.array(ix))


def column_text(values: Any) -> pa.Array:
    """One column (numpy or pandas values, or ``(codes, names)``) as CSV field texts."""
    if isinstance(values, tuple):
        return coded_text(*values)
    if isinstance(values, pd.Categorical):
        return coded_text(values.codes, [str(c) for c in values.categories])
    if isinstance(values, pd.Series):
        if isinstance(values.dtype, pd.CategoricalDtype):
            return column_text(values.array)
        if isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
            return _arrow_text(pa.array(values.array))
        if isinstance(values.dtype, pd.Int64Dtype):  # integers, missing ones empty
            return pc.fill_null(pc.cast(pa.array(values.array), pa.string()), "")
        values = values.to_numpy()
    arr = np.asarray(values)
    if arr.dtype.kind == "b":
        return pa.array(["False", "True"], pa.string()).take(pa.array(arr.astype(np.int8)))
    if arr.dtype.kind in "iu":
        return pc.cast(pa.array(arr), pa.string())
    if arr.dtype.kind == "f":
        return float_text(arr)
    codes, uniques = pd.factorize(arr, use_na_sentinel=True)
    return coded_text(codes, [str(u) for u in uniques])


def _arrow_text(arr: pa.Array) -> pa.Array:
    """Arrow strings (nulls empty), each distinct one quoted once, with no Python string
    per row."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    coded = pc.dictionary_encode(arr)
    names = quoted(coded.dictionary.to_pylist()) + [""]
    ix = pc.fill_null(coded.indices, len(names) - 1)
    return pa.array(names, pa.string()).take(ix)


def printable_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the control characters of its texts and its column names escaped
    (``base.printable``), for a table written by pandas (a hunt's or a sweep's runs)."""
    out = frame.copy(deep=False)
    for c in out.columns:  # (texts are objects, or pandas' own string dtype)
        if out[c].dtype == object or pd.api.types.is_string_dtype(out[c].dtype):
            out[c] = out[c].map(lambda v: printable(v) if isinstance(v, str) else v)
    out.columns = [printable(str(c)) for c in out.columns]
    return out


def write_csv(path: str | Path, columns: dict[str, Any], rows: int) -> dict[Any, str]:
    """Write ``columns`` (name → values of ``rows`` rows: see ``column_text``) as ``path``,
    a block of rows at a time. Its SHA-256, taken as it is written, is remembered for the
    folder's manifest (``base.outdir.wrote``: its entry is returned)."""
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        head = (",".join(quoted(list(columns))) + "\n").encode("utf-8")
        f.write(head)
        digest.update(head)
        for start in range(0, rows, BLOCK):
            stop = min(rows, start + BLOCK)
            parts = [column_text(_rows(v, start, stop)) for v in columns.values()]
            parts[-1] = pc.binary_join_element_wise(parts[-1], "\n", "")  # each line's end
            lines = pc.binary_join_element_wise(*parts, ",")
            del parts
            text = _text(lines)
            f.write(text)
            digest.update(text)
            del text, lines
    pa.default_memory_pool().release_unused()  # the blocks' text, back to the system
    return outdir.wrote(Path(path), digest.hexdigest())


def _rows(values: Any, start: int, stop: int) -> Any:
    if isinstance(values, tuple):
        return values[0][start:stop], values[1]
    if isinstance(values, pd.Series):
        return values.iloc[start:stop]
    return values[start:stop]


def _text(lines: pa.Array) -> memoryview:
    """The text of the strings ``lines`` end to end, as a view of their buffer."""
    wide = pa.types.is_large_string(lines.type)
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64 if wide else np.int32)
    first, last = offsets[lines.offset], offsets[lines.offset + len(lines)]
    data = lines.buffers()[2]
    return memoryview(data)[first:last] if data is not None else memoryview(b"")
