"""Execute the notebooks, each top to bottom in a fresh kernel from the notebooks folder, and
print each one's wall time: ``python tools/run_notebooks.py [--seed N] [--check] [NAME…]``
(a NAME picks the notebooks whose file name contains it; none: all of them).

- By default each runs at full size and its outputs and execution counts are replaced in
  place, so that the committed copies show full-size results (run so, at the committed
  seed, before committing a notebook).
- ``--seed N`` runs them at other seeds: ``JOBSIM_SEED=N`` moves every seed a notebook uses
  by N (``jobsim.seed``); 0 is the committed run.
- ``--check`` executes them in memory and writes nothing: it prints ``pass`` or ``FAIL``
  for each, with its wall time, and for a failure the cell that failed and its error; the
  exit status is 1 if any failed.
- ``JOBSIM_FAST=1`` makes them small (the test suite's mode); it combines with both.

For example ``JOBSIM_FAST=1 python tools/run_notebooks.py --check --seed 100``."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def failing_cell(nb) -> tuple[int, str] | None:
    """(index, source's first line) of the first code cell with an error output."""
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(o.get("output_type") == "error"
                                            for o in cell.get("outputs", [])):
            first = cell.source.strip().splitlines()
            return i, first[0] if first else ""
    return None


def execute(path: Path, seed: int | None = None, write: bool = True) -> tuple[float, str | None]:
    """Run one notebook (at seed shift ``seed``, if given); write it back if ``write``.
    Returns (wall seconds, None) or (wall seconds, what failed: the cell and its error)."""
    nb = nbformat.read(path, as_version=4)
    saved = os.environ.get("JOBSIM_SEED")
    if seed is not None:
        os.environ["JOBSIM_SEED"] = str(seed)   # the kernel inherits this environment
    t0 = time.perf_counter()
    failure = None
    try:
        NotebookClient(nb, timeout=1800, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    except CellExecutionError as exc:
        if write:
            raise
        where = failing_cell(nb)
        cell = f"cell {where[0]} ({where[1]!r})" if where else "a cell"
        error = str(exc).strip().splitlines()
        failure = f"{cell}: {error[-1] if error else exc!r}"
    finally:
        if seed is not None:
            if saved is None:
                os.environ.pop("JOBSIM_SEED", None)
            else:
                os.environ["JOBSIM_SEED"] = saved
    took = time.perf_counter() - t0
    if write:
        nb.metadata.pop("widgets", None)
        for cell in nb.cells:  # no wall-clock timestamps in the committed files
            cell.metadata.pop("execution", None)
        nbformat.write(nb, path)
    return took, failure


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help="run the notebooks whose file name contains one of these")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="move every seed the notebooks use by N (JOBSIM_SEED=N; "
                             "default: the committed seeds)")
    parser.add_argument("--check", action="store_true",
                        help="execute in memory, write nothing; print pass/FAIL per notebook")
    args = parser.parse_args(argv)
    if args.seed is not None and args.seed < 0:
        parser.error("--seed must be 0 or more")
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if args.names:
        paths = [p for p in paths if any(n in p.name for n in args.names)]
        if not paths:
            print(f"no notebook matches {args.names}", file=sys.stderr)
            return 2
    mode = "fast" if os.environ.get("JOBSIM_FAST", "0") not in ("", "0") else "full size"
    seed = args.seed if args.seed is not None else os.environ.get("JOBSIM_SEED") or 0
    failed = 0
    for path in paths:
        took, failure = execute(path, args.seed, write=not args.check)
        if args.check:
            verdict = "pass" if failure is None else "FAIL"
            print(f"{path.name}: {verdict} · seed +{seed} · {mode} · {took:.1f} s"
                  + (f"\n    {failure}" if failure else ""), flush=True)
            failed += failure is not None
        else:
            print(f"{path.name}: {took:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
