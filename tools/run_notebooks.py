"""Execute the notebooks in place at full size, so that the committed copies show full-size
results: ``python tools/run_notebooks.py [NAME…]``. Each runs top to bottom in a fresh
kernel from the notebooks folder; its outputs and execution counts are replaced, and the
wall time is printed. ``JOBSIM_FAST=1`` makes them small (the test suite's mode)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=1800, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    took = time.perf_counter() - t0
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:  # no wall-clock timestamps in the committed files
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    return took


def main(names: list[str]) -> int:
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    if names:
        paths = [p for p in paths if any(n in p.name for n in names)]
        if not paths:
            print(f"no notebook matches {names}", file=sys.stderr)
            return 2
    for path in paths:
        print(f"{path.name}: {execute(path):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
