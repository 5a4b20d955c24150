"""One scenario and one seed give one trace, byte for byte, under any PYTHONHASHSEED; another
seed on a random workload gives another trace."""

import json
import os
import subprocess
import sys

from jobsim.format import scenario
from jobsim.sim.world import run


def _hash_in_subprocess(path, hashseed: str, tmp_path, seed=None) -> str:
    out = tmp_path / f"run-{hashseed}-{seed}"
    argv = [sys.executable, "-m", "jobsim", "run", str(path), "--out", str(out), "--quiet"]
    if seed is not None:
        argv += ["--seed", str(seed)]
    env = dict(os.environ, PYTHONHASHSEED=hashseed)
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "summary.json").read_text())["trace_sha256"]


def test_same_trace_under_any_hash_seed(lesson_path, tmp_path):
    a = _hash_in_subprocess(lesson_path, "0", tmp_path)
    b = _hash_in_subprocess(lesson_path, "1", tmp_path)
    assert a == b


def test_random_workload_same_trace_under_any_hash_seed_and_files_identical(tmp_path):
    from conftest import SCENARIOS

    path = SCENARIOS / "race.yaml"
    a = _hash_in_subprocess(path, "0", tmp_path)
    b = _hash_in_subprocess(path, "12345", tmp_path)
    assert a == b
    for name in ("trace.csv", "jobs.csv", "summary.json"):
        assert (tmp_path / "run-0-None" / name).read_bytes() == \
            (tmp_path / "run-12345-None" / name).read_bytes()


def test_another_seed_gives_another_trace(tmp_path):
    from conftest import SCENARIOS

    path = SCENARIOS / "race.yaml"
    assert _hash_in_subprocess(path, "0", tmp_path, seed=1) != \
        _hash_in_subprocess(path, "0", tmp_path, seed=2)


def test_in_process_runs_repeat_exactly(race_text):
    sc = scenario.loads(race_text)
    assert run(sc).trace_sha256 == run(sc).trace_sha256
    assert run(sc, seed=3).trace_sha256 != run(sc, seed=4).trace_sha256


def test_adding_a_handler_does_not_shift_another_streams_draws(race_text):
    """Named streams: a new handler (and its stream) leaves the other draws alone, so a
    workload's arrivals are the same with or without it."""
    sc = scenario.loads(race_text)
    extra = race_text.replace("handlers:\n", "handlers:\n  unused:\n    duration: 1s\n")
    sc2 = scenario.loads(extra)
    a, b = run(sc).trace.arrays(), run(sc2).trace.arrays()
    from jobsim.base.trace import K

    created_a = a["time"][a["kind"] == K["job_created"]]
    created_b = b["time"][b["kind"] == K["job_created"]]
    assert (created_a == created_b).all()
