"""``jobsim view RUN_DIR [--out FILE]``: the interactive page of a run folder, rebuilt from
its files (trace.csv and summary.json; each variant's, for a run with variants).

The page goes to ``RUN_DIR/view.html`` (where ``jobsim run`` puts it) unless ``--out``
says otherwise, and is listed in the run folder's manifest. An existing file is replaced
only if jobsim wrote it: listed in its folder's manifest with the bytes it still has, or,
outside a run folder, carrying the page's generator mark. A folder that is not a run
folder, a missing or damaged trace, or a file jobsim did not write: a message naming the
path, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .status import BAD_INPUT, OK, stopped


def _ours(path: Path) -> bool:
    """Whether the file carries the page's generator mark (near its start)."""
    from ..output.view import GENERATOR

    try:
        with open(path, "rb") as f:
            return GENERATOR.encode() in f.read(4096)
    except OSError:
        return False


def _view(args: argparse.Namespace) -> int:
    from ..base import outdir, outfile
    from ..output.view import FILE, ViewError, folder_page

    folder = Path(args.run_dir)
    out = Path(args.out) if args.out else folder / FILE
    try:
        if args.out is None and not folder.is_dir():
            raise ViewError(f"{folder}: not a folder (give the run folder that jobsim run "
                            "wrote)")
        outfile.check_file(out, _ours)  # before the work, not after it
        text = folder_page(folder)
        outfile.write_file(out, lambda p: p.write_text(text, encoding="utf-8"), _ours)
    except (ViewError, outdir.OutputError) as exc:
        print(f"jobsim: {exc}", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        print(f"jobsim: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP (``base.signals``)
        return stopped(exc, "nothing was written" + (f" ({out} is as it was)"
                                                    if out.exists() else ""))
    print(f"view: {out}")
    return OK
