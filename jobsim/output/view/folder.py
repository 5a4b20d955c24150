"""A run folder read back: each run's trace (from trace.csv, as a ``Trace``) and summary
(summary.json), for ``jobsim view RUN_DIR``.

A run folder is one run (trace.csv and summary.json in it) or a run with variants (a
summary.json whose ``variants`` name the sub-folders, each one run). Anything else is a
``ViewError`` that names the path and says what is missing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ...base.trace import COLUMNS, K, Trace


class ViewError(Exception):
    """The view cannot be built or written as asked: the message names the path."""


def _coded(values: Any) -> tuple[np.ndarray, list[str]]:
    """Texts as codes into their distinct non-empty values (first seen first); "" → -1."""
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(values).combine_chunks()
    names = [str(v) for v in enc.dictionary.to_pylist()]
    kept = [n for n in names if n != ""]
    at = {n: i for i, n in enumerate(kept)}
    remap = np.array([at.get(n, -1) for n in names] or [-1], np.int64)
    idx = enc.indices.to_numpy(zero_copy_only=False)
    return (remap[idx] if len(idx) else np.zeros(0, np.int64)), kept


def load_trace(path: Path) -> Trace:
    """trace.csv (as ``report`` writes it) as a ``Trace``; ViewError if it is not one. A
    job's name (``job_created``'s ``c``, a code into the run's texts, which trace.csv does
    not keep) is read from the jobs.csv beside it."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    floats = {"time", "x"}
    types = {c: pa.float64() if c in floats else pa.int64() for c in COLUMNS}
    types.update(seq=pa.int64(), kind=pa.string(), node=pa.string(), text=pa.string())
    try:
        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            column_types=types, strings_can_be_null=False, include_columns=list(types)))
    except (OSError, pa.ArrowInvalid, pa.ArrowKeyError) as exc:
        raise ViewError(f"{path}: not a jobsim trace.csv ({str(exc).splitlines()[0]})"
                        ) from None
    cols: dict[str, np.ndarray] = {}
    for c in ("time", "job", "attempt", "a", "b", "c", "x"):
        col = table[c]
        cols[c] = np.array((pc.fill_null(col, np.nan) if c in floats else col).to_numpy())
    codes, kinds = _coded(table["kind"])
    unknown = sorted(set(kinds) - set(K))
    if unknown:
        raise ViewError(f"{path}: unknown event kind {unknown[0]!r} (written by a newer "
                        "jobsim?)")
    if (codes < 0).any():
        raise ViewError(f"{path}: an event without a kind")
    cols["kind"] = np.array([K[k] for k in kinds] or [0], np.int8)[codes]
    cols["node"], nodes = _coded(table["node"])
    cols["text"], texts = _coded(table["text"])
    named = np.flatnonzero((cols["kind"] == K["job_created"]) & (cols["c"] >= 0))
    if len(named):
        names = _job_names(path.parent / "jobs.csv")
        at = {t: i for i, t in enumerate(texts)}
        for i in named.tolist():
            name = names.get(int(cols["job"][i]))
            if not name:
                raise ViewError(f"{path.parent / 'jobs.csv'}: no name for job "
                                f"{int(cols['job'][i])}, which trace.csv says has one")
            if name not in at:
                at[name] = len(texts)
                texts.append(name)
            cols["c"][i] = at[name]
    return Trace.from_arrays(cols, nodes, texts)


def _job_names(path: Path) -> dict[int, str]:
    """The named jobs of jobs.csv: id → name."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    try:
        table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            column_types={"id": pa.int64(), "name": pa.string()}, strings_can_be_null=False,
            include_columns=["id", "name"]))
    except (OSError, pa.ArrowInvalid, pa.ArrowKeyError) as exc:
        raise ViewError(f"{path}: cannot be read ({str(exc).splitlines()[0]}): the job "
                        "names are in it") from None
    return {i: n for i, n in zip(table["id"].to_pylist(), table["name"].to_pylist()) if n}


def _summary(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise ViewError(f"{path}: missing (a run folder has the summary.json that jobsim run "
                        "wrote)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ViewError(f"{path}: cannot be read ({exc})") from None
    if not isinstance(doc, dict):
        raise ViewError(f"{path}: not a jobsim summary")
    return doc


def read_run(folder: str | Path) -> list[tuple[Trace, dict[str, Any], str | None]]:
    """Each run of the run folder ``folder``: (trace, summary, variant name or None), the
    variants in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ViewError(f"{folder}: not a folder (give the run folder that jobsim run "
                        "wrote)")
    summary_path = folder / "summary.json"
    if (folder / "trace.csv").is_file():
        return [(load_trace(folder / "trace.csv"), _summary(summary_path), None)]
    if not summary_path.is_file():
        raise ViewError(f"{folder}: not a run folder: it has no trace.csv and no "
                        "summary.json (give the folder that jobsim run wrote)")
    top = _summary(summary_path)
    variants = top.get("variants")
    if not isinstance(variants, dict) or not variants:
        raise ViewError(f"{folder / 'trace.csv'}: missing (the folder's summary.json names "
                        "no variants either)")
    order = top.get("variant_order")  # the file's order; an older folder's: by name
    names = [n for n in order if n in variants] if isinstance(order, list) and \
        sorted(order) == sorted(variants) else sorted(variants)
    runs = []
    for name in names:
        trace = folder / name / "trace.csv"
        if not trace.is_file():
            raise ViewError(f"{trace}: missing (variant {name} of {folder})")
        summary = variants[name] if isinstance(variants[name], dict) else {}
        runs.append((load_trace(trace), summary, name))
    return runs
