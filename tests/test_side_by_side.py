"""executors_side_by_side.yaml: five executors, one workload, one crash."""

import numpy as np

from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.base.trace import K
from jobsim.sim.world import run

PATH = "scenarios/executors_side_by_side.yaml"


def test_every_policy_sees_the_same_arrivals_and_its_own_signature():
    runs = {sc.variant: run(sc) for sc in scenario.load_variants(PATH, sets=["horizon=2h"])}
    assert list(runs) == ["lesson", "flowable", "failsafe", "zeebe_like", "skip_locked"]
    created = []
    for r in runs.values():
        c = r.trace.arrays()
        sel = c["kind"] == K["job_created"]
        created.append((c["time"][sel], c["job"][sel], c["text"][sel]))
    for t, j, h in created[1:]:  # common random numbers: the same jobs at the same instants
        assert np.array_equal(t, created[0][0]) and np.array_equal(j, created[0][1])
    s = {name: analyse(r).summary for name, r in runs.items()}
    # what each strands after the crash, and for how long
    assert s["lesson"]["crash_recovery"]["delay"]["max"] <= 320.0
    assert s["failsafe"]["crash_recovery"]["delay"]["max"] <= 310.0
    assert s["flowable"]["crash_recovery"]["delay"]["max"] >= 3000.0
    assert s["skip_locked"]["crash_recovery"]["delay"]["max"] >= 3000.0
    assert s["zeebe_like"]["crash_recovery"]["unrecovered"] > 0
    # what each runs twice: only the lesson's 5-minute lock lets the 8-minute exports double
    assert s["lesson"]["duplicate_executions"]["by_cause"]["lock_expired"] > 0
    assert all(s[p]["duplicate_executions"]["by_cause"]["lock_expired"] == 0
               for p in ("flowable", "failsafe", "zeebe_like", "skip_locked"))
    # where each puts what keeps failing
    assert (s["lesson"]["jobs"]["dead_lettered"], s["flowable"]["jobs"]["dead_lettered"],
            s["zeebe_like"]["jobs"]["incident"]) == (3, 3, 3)
    assert s["failsafe"]["jobs"]["failed"] > 3 and s["failsafe"]["jobs"]["dead_lettered"] == 0
    assert s["skip_locked"]["named"]["bad-1"]["outcome"] == "pending"  # still retrying
    assert all(v["jobs"]["lost"] == 0 and v["double_acquisitions"] == 0 for v in s.values())
