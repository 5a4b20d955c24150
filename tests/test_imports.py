"""A command pays only for what it uses: ``import jobsim`` imports neither pandas nor
matplotlib nor Bokeh (the public names come at first use), a bad flag is answered before
any of them, a command that runs nothing (checking files, listing, the schema, a new
scenario, help) imports none of them, and ``jobsim run --no-plots --no-view`` draws nothing
and imports neither matplotlib nor Bokeh. Each in a fresh interpreter (this process has them
all)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "matplotlib", "bokeh")


def _imported_by(code: str, tmp_path: Path) -> dict:
    probe = (f"import sys, json\n{code}\n"
             f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "JOBSIM_PROGRESS": "0",
                                            "PATH": "/usr/bin:/bin"}, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_jobsim_imports_no_heavy_library(tmp_path):
    assert _imported_by("import jobsim", tmp_path) == dict.fromkeys(HEAVY, False)


def test_the_public_names_still_come_at_first_use(tmp_path):
    got = _imported_by("import jobsim, jobsim.plots\n"
                       "assert jobsim.plots is sys.modules['jobsim.output.plots']\n"
                       "from jobsim import run, write, Analysis, plots\n"
                       "assert sorted(dir(jobsim)) == sorted(jobsim.__all__)\n"
                       "assert all(getattr(jobsim, n) is not None for n in jobsim.__all__)",
                       tmp_path)
    assert got == {"pandas": True, "matplotlib": True, "bokeh": False}


def test_a_bad_flag_is_answered_without_them(tmp_path):
    got = _imported_by("from jobsim.cli import main\n"
                       "import contextlib, io\n"
                       "with contextlib.redirect_stderr(io.StringIO()):\n"
                       "    assert main(['run', '--no-such-flag']) == 2", tmp_path)
    assert got == dict.fromkeys(HEAVY, False)


@pytest.mark.parametrize("args", [
    ["validate", str(ROOT / "scenarios" / "lesson.yaml")],
    ["validate", str(ROOT / "scenarios" / "lock_expiry.yaml")],  # variants, a sweep grid
    ["list"],
    ["schema"],
    ["new", "mine"],
    ["sweep", "--help"],
])
def test_a_command_that_runs_nothing_imports_no_heavy_library(args, tmp_path):
    """``jobsim validate`` imported pandas through the sweep package (its grid's check):
    0.55 CPU s of a fresh process, 0.3 s without."""
    got = _imported_by("from jobsim.cli import main\n"
                       "import contextlib, io\n"
                       "with contextlib.redirect_stdout(io.StringIO()):\n"
                       "    try:\n"
                       f"        assert main({args!r}) in (0, None)\n"
                       "    except SystemExit as exc:  # --help\n"
                       "        assert exc.code in (0, None)", tmp_path)
    assert got == dict.fromkeys(HEAVY, False), f"jobsim {' '.join(args)}"


def test_a_run_without_plots_imports_no_plotting_library(tmp_path):
    lesson = ROOT / "scenarios" / "lesson.yaml"
    got = _imported_by("from jobsim.cli import main\n"
                       "import contextlib, io\n"
                       "with contextlib.redirect_stdout(io.StringIO()):\n"
                       f"    assert main(['run', {str(lesson)!r}, '--out', 'o', '--quiet', "
                       "'--no-plots', '--no-view']) == 0", tmp_path)
    assert got == {"pandas": True, "matplotlib": False, "bokeh": False}
    assert not list((tmp_path / "o").glob("*.png")) and (tmp_path / "o" / "report.md").exists()


def test_the_page_imports_neither_matplotlib_nor_bokeh(tmp_path):
    """The interactive page (built in a child process beside the plots, or by ``jobsim
    view``) draws from ``plotdata``, never from the static figures' modules, and writes
    Bokeh's JSON itself (``bokeh_doc``): building it costs neither a matplotlib nor a Bokeh
    import (its BokehJS is read from Bokeh's files)."""
    lesson = ROOT / "scenarios" / "lesson.yaml"
    got = _imported_by("from jobsim.format import scenario\n"
                       "from jobsim.output.report import analyse\n"
                       "from jobsim.sim.world import run\n"
                       "from jobsim.output.view import analyses_page\n"
                       f"a = analyse(run(scenario.load({str(lesson)!r})))\n"
                       "assert '<html' in analyses_page([a])", tmp_path)
    assert got == {"pandas": True, "matplotlib": False, "bokeh": False}
