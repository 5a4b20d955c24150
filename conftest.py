"""The whole suite's settings (tests/ and notebooks/).

- The notebooks run small: ``jobsim.fast()`` reads ``JOBSIM_FAST`` (the committed notebooks
  are executed full size by ``python tools/run_notebooks.py``).
- **Fresh seeds, one per session.** The run draws one base seed (the controller, when
  pytest-xdist runs the tests in worker processes, and hands it to every worker, so that
  each collects the same tests); the header prints it. A test that wants seeds never run
  before takes the ``fresh_seed`` fixture: its own seed, derived from the base seed and the
  test's id (the same in any worker, in any order), printed with the command that replays
  it. ``JOBSIM_TEST_SEED=N`` sets the base seed: it replays a run's draws. Hypothesis's
  draws follow it too (outside CI, where Hypothesis derandomises by itself).
- **Nothing shared that a test writes.** Each worker gets a folder of its own (deleted at
  its end) for what the notebooks' kernels keep (IPython's history database) and what
  Hypothesis keeps (its cache of constants; it keeps no example database): in the checkout
  or the home folder they would be shared by the workers and by two runs at once.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shlex
import shutil
import tempfile

import pytest

os.environ.setdefault("JOBSIM_FAST", "1")

SEED_VARIABLE = "JOBSIM_TEST_SEED"
_BASE_SEED = pytest.StashKey[int]()
_PRIVATE_DIR = pytest.StashKey[str]()


def _base_seed(config: pytest.Config) -> int:
    worker = getattr(config, "workerinput", None)
    if worker is not None and SEED_VARIABLE in worker:  # an xdist worker: the controller's
        return int(worker[SEED_VARIABLE])
    text = os.environ.get(SEED_VARIABLE, "").strip()
    if not text:
        return secrets.randbits(32)
    try:
        return int(text, 0)
    except ValueError:
        raise pytest.UsageError(f"{SEED_VARIABLE} must be an integer (got {text!r})") from None


def pytest_configure(config: pytest.Config) -> None:
    seed = config.stash[_BASE_SEED] = _base_seed(config)
    private = tempfile.mkdtemp(prefix="jobsim-tests-")
    config.stash[_PRIVATE_DIR] = private
    # the notebooks' kernels inherit it: their history database is this run's, this worker's
    os.environ["IPYTHONDIR"] = os.path.join(private, "ipython")
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(private, "hypothesis")
    try:
        from hypothesis import core, settings
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:
        return
    # what Hypothesis keeps (its cache of a module's constants; no example database): this
    # worker's, not the checkout's .hypothesis/
    set_hypothesis_home_dir(os.environ["HYPOTHESIS_STORAGE_DIRECTORY"])
    settings.register_profile("jobsim-tests", parent=settings.default, database=None)
    settings.load_profile("jobsim-tests")
    if config.getoption("hypothesis_seed", None) is None:
        core.global_force_seed = seed


def pytest_unconfigure(config: pytest.Config) -> None:
    private = config.stash.get(_PRIVATE_DIR, None)
    if private:
        shutil.rmtree(private, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """pytest-xdist, in the controller: each worker gets the session's base seed."""
    node.workerinput[SEED_VARIABLE] = node.config.stash[_BASE_SEED]


#: notebooks in the slow tier (``-m slow``), with what their small run (JOBSIM_FAST) costs:
#: a notebook is no Python function to mark
SLOW_NOTEBOOKS = {
    "03_crashes_and_lock_expiry.ipynb": "52 CPU s: its hunt of 64 runs, its lock-time sweep",
    "05_latency.ipynb": "17 CPU s: its latency runs at 20,000 jobs",
    "07_retry_storms.ipynb": "50 CPU s: its strategies over seeds, its Python handlers",
}


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.suffix == ".ipynb" and item.path.name in SLOW_NOTEBOOKS:
            item.add_marker(pytest.mark.slow)


def pytest_report_header(config: pytest.Config) -> str:
    return (f"fresh seeds: {SEED_VARIABLE}={config.stash[_BASE_SEED]} "
            f"(set it to replay this run's draws)")


def replay_command(config: pytest.Config, nodeid: str) -> str:
    return (f"{SEED_VARIABLE}={config.stash[_BASE_SEED]} python -m pytest -n 0 "
            f"{shlex.quote(nodeid)}")


@pytest.fixture
def fresh_seed(request: pytest.FixtureRequest) -> int:
    """A seed for this test alone, new every session (31 bits): from the session's base
    seed and the test's id. It is printed with the command that replays it, which a
    failure shows."""
    base = request.config.stash[_BASE_SEED]
    digest = hashlib.sha256(f"{base}/{request.node.nodeid}".encode()).digest()
    seed = int.from_bytes(digest[:4], "big") >> 1
    print(f"fresh seed {seed}; replay: {replay_command(request.config, request.node.nodeid)}")
    return seed
