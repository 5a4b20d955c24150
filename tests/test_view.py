"""view.html, a run's interactive page: the same bytes every time and either way it is built
(from the run in memory by ``jobsim run``, from the folder by ``jobsim view``), one tab per
variant, a page under 10 MB for 100,000 jobs, ``jobsim view``'s refusals (exit 2), and the
page opened in headless Chromium: no error, and one bar per execution; the lesson's empty
acquisition by node-B at t=0 and its zero-length runs, zombie_pause's two payments,
retry_storm's outage and load, the lock-expiry note's numbers and a legend of what occurs.

The browser test skips, saying why, where no Chromium is found (``.ci/run`` installs
Debian's ``chromium``).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, SCENARIOS
from jobsim.base import outdir
from jobsim.cli import main
from jobsim.format import scenario
from jobsim.output.report import analyse
from jobsim.output.view import FILE, analyses_page, folder_page
from jobsim.sim.world import run

HERE = Path(__file__).resolve().parent / "view"
SMALL = HERE / "small.yaml"  # a pause, a crash, retries and a dead letter
BIG = HERE / "big.yaml"  # 100,000 jobs


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view") / "small"
    assert main(["run", str(SMALL), "--out", str(out), "--quiet"]) == 0
    return out


def test_same_bytes_every_time_and_either_way(small_run, tmp_path):
    """Two builds in one process, a second ``jobsim run``, and ``jobsim view`` of the folder
    (trace.csv read back) give the same page; the view changes no trace."""
    analyses = [analyse(run(sc)) for sc in scenario.load_variants(SMALL)]
    first, second = analyses_page(analyses), analyses_page(analyses)
    assert first == second
    assert (small_run / FILE).read_text(encoding="utf-8") == first
    assert folder_page(small_run) == first
    again = tmp_path / "again"
    assert main(["run", str(SMALL), "--out", str(again), "--quiet"]) == 0
    assert _sha(again / FILE) == _sha(small_run / FILE)
    summary = json.loads((small_run / "summary.json").read_text())
    assert analyses[0].result.trace.sha256() == summary["trace_sha256"]
    assert "trace_sha256" in summary and '"v1"' in first and "p1001" not in first
    assert not re.search(r"<script[^>]*\bsrc=|<link\b", first)  # everything inlined


def test_run_lists_the_view_in_its_manifest_and_no_view_skips_it(small_run, tmp_path):
    manifest = outdir.read_manifest(small_run)
    assert manifest["files"][FILE] == _sha(small_run / FILE)
    bare = tmp_path / "bare"
    assert main(["run", str(SMALL), "--out", str(bare), "--quiet", "--no-view"]) == 0
    assert not (bare / FILE).exists() and (bare / "timeline.png").exists()
    # report.md lists the files there are: the page's absence and how to build it
    files = (bare / "report.md").read_text(encoding="utf-8").split("## Files", 1)[1]
    assert "no `view.html` (`jobsim view` on this folder builds it)" in files
    assert "`view.html` (the run to explore" in \
        (small_run / "report.md").read_text(encoding="utf-8").split("## Files", 1)[1]


def test_view_rewrites_its_own_page_and_refuses_a_foreign_file(small_run, tmp_path, capsys):
    folder = tmp_path / "r"
    shutil.copytree(small_run, folder)
    (folder / FILE).unlink()  # as in a committed report: listed, but not in the repository
    assert main(["view", str(folder)]) == 0
    assert _sha(folder / FILE) == outdir.read_manifest(folder)["files"][FILE]
    assert main(["view", str(folder)]) == 0  # its own page, again
    assert main(["run", str(SMALL), "--out", str(folder), "--quiet"]) == 0
    mine = tmp_path / "mine.html"
    mine.write_text("<p>my notes</p>\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["view", str(folder), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert str(mine) in err and "did not write" in err and "Traceback" not in err
    assert mine.read_text(encoding="utf-8") == "<p>my notes</p>\n"
    (folder / FILE).write_text("edited\n", encoding="utf-8")  # listed, but changed
    assert main(["view", str(folder)]) == 2
    assert "changed since jobsim wrote it" in capsys.readouterr().err
    assert (folder / FILE).read_text(encoding="utf-8") == "edited\n"
    page = tmp_path / "page.html"  # outside a run folder: its own mark lets it replace it
    assert main(["view", str(small_run), "--out", str(page)]) == 0
    assert main(["view", str(small_run), "--out", str(page)]) == 0
    assert _sha(page) == _sha(small_run / FILE)


def test_bad_input_names_the_path(small_run, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    broken = tmp_path / "broken"
    shutil.copytree(small_run, broken)
    (broken / "trace.csv").write_text("not,a,trace\n1,2,3\n", encoding="utf-8")
    variants = tmp_path / "variants"
    variants.mkdir()
    (variants / "summary.json").write_text('{"scenario": "x", "variants": {"a": {}}}\n')
    for folder, said in ((tmp_path / "missing", "not a folder"), (empty, "not a run folder"),
                         (broken, "trace.csv"), (variants, str(variants / "a" / "trace.csv"))):
        capsys.readouterr()
        assert main(["view", str(folder), "--out", str(tmp_path / "v.html")]) == 2, folder
        err = capsys.readouterr().err
        assert said in err and str(folder) in err and "Traceback" not in err, err
    assert not (tmp_path / "v.html").exists()


def test_a_variant_run_gets_one_tab_per_variant(tmp_path):
    analyses = [analyse(run(sc)) for sc in scenario.load_variants(SCENARIOS /
                                                                  "zombie_pause.yaml")]
    page = analyses_page(analyses)
    tabs = re.findall(r'<button type="button" data-key="(\d+)">([^<]*)</button>', page)
    assert tabs == [("0", "guarded"), ("1", "fencing"), ("2", "unguarded")]
    for k, name in tabs:
        assert f'id="tab-{k}" data-key="{k}" data-variant="{name}"' in page
        assert f'id="jobsim-item-{k}"' in page
        assert f"zombie_pause · seed 3 · variant {name}" in page
    single = analyses_page(analyses[:1])  # a run without variants: no tabs
    assert "<nav" not in analyses_page([analyse(run(scenario.load(SMALL)))])
    assert single.count('<section class="run"') == 1


def test_beyond_its_bound_an_evenly_spaced_subset_is_drawn(monkeypatch):
    from jobsim.output.view import data
    from jobsim.output.view.page import page

    a = analyse(run(scenario.load(SMALL)))
    monkeypatch.setattr(data, "MAX_EXECUTIONS", 10)
    view = data.run_data(a.result.trace, a.histories, a.summary, None)
    drawn = view.tables["executions"]
    assert len(drawn["start"]) == 10 and view.counts["executions"] == a.summary["executions"]
    assert set(view.tables["jobs"]["id"].tolist()) == set(drawn["job"].tolist())
    assert "showing 10 of them" in page([(view, a.summary)], "x")


# The page's size at 100,000 jobs (its cap on executions is tested small)
@pytest.mark.slow  # 6 CPU s
def test_100000_jobs_page_under_10_mb():
    t = time.perf_counter()
    a = analyse(run(scenario.load(BIG)))
    simulated = time.perf_counter() - t
    t = time.perf_counter()
    page = analyses_page([a])
    built = time.perf_counter() - t
    size = len(page.encode("utf-8"))
    print(f"100,000 jobs: {a.summary['executions']} executions, simulated {simulated:.1f}s, "
          f"page {size / 1e6:.2f} MB built in {built:.1f}s")
    assert a.summary["jobs"]["created"] == 100_000 and a.summary["executions"] > 100_000
    assert size < 10_000_000


# --- in a browser ----------------------------------------------------------------------------

def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium here (Debian: apt-get install chromium; .ci/run installs it)")


def _dom(page: Path, profile: Path, tab: str = "") -> tuple[str, str]:
    """The page's DOM once its scripts ran (virtual time), and Chromium's log; ``tab``: the
    tab to open (the address's ``#variant``)."""
    proc = subprocess.run(
        [_chromium(), "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: no name resolves
         "--virtual-time-budget=20000", "--dump-dom",
         page.resolve().as_uri() + (f"#{tab}" if tab else "")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _section(dom: str, key: str) -> dict[str, str]:
    tag = re.search(rf'<section class="run" id="tab-{key}"[^>]*>', dom)
    assert tag, "the tab's section is missing"
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', tag.group(0)))


def test_in_chromium_no_error_and_a_bar_per_execution(small_run, tmp_path):
    dom, log = _dom(small_run / FILE, tmp_path / "profile")
    body = re.search(r'<body data-errors="(\d+)"', dom)
    assert body and body.group(1) == "0", re.search(
        r'<div id="jobsim-errors"[^>]*>([^<]*)', dom)
    assert "Uncaught" not in log, [line for line in log.splitlines() if "Uncaught" in line]
    attrs = _section(dom, "0")
    executions = json.loads((small_run / "summary.json").read_text())["executions"]
    assert attrs["executions"] == attrs["rendered"] == str(executions), attrs
    assert attrs["backend"] in ("webgl", "canvas")


def test_in_chromium_the_lock_expiry_report_page(tmp_path):
    """``jobsim view`` on the committed lock_expiry report: a tab per variant, each with a
    bar per execution its summary counts, and no error."""
    page = tmp_path / "lock_expiry.html"
    assert main(["view", str(ROOT / "reports" / "lock_expiry"), "--out", str(page)]) == 0
    assert page.stat().st_size < 10_000_000
    summary = json.loads((ROOT / "reports" / "lock_expiry" / "summary.json").read_text())
    assert summary["variant_order"] == ["no_heartbeat", "heartbeat"]  # the file's order
    for key, variant in enumerate(summary["variant_order"]):
        dom, log = _dom(page, tmp_path / f"profile{key}", tab=variant)
        assert re.search(r'<body data-errors="0"', dom), log[-2000:]
        attrs = _section(dom, str(key))
        assert attrs["variant"] == variant
        assert int(attrs["rendered"]) == summary["variants"][variant]["executions"]


# The browser at 100,000 jobs (the lock_expiry page's browser test stays)
@pytest.mark.slow  # 13 CPU s
def test_in_chromium_100000_jobs(tmp_path):
    out = tmp_path / "big"
    assert main(["run", str(BIG), "--out", str(out), "--quiet", "--no-plots"]) == 0
    dom = _dom_at(out / FILE, tmp_path / "profile", "at=110")  # 10 s after node-2's crash
    executions = json.loads((out / "summary.json").read_text())["executions"]
    attrs = _section(dom, "0")
    assert attrs["executions"] == attrs["rendered"] == str(executions)
    # the table at the cursor: every row present counted, at most 200 listed, a note says so
    panel = re.search(r'<div class="instant" id="instant-0" data-at="110" data-rows="(\d+)">'
                      r'(.*?)</div>', dom, re.S)
    assert panel, "no table at the cursor"
    rows = int(panel.group(1))
    listed = panel.group(2).count("<tr>") - 1
    assert listed == min(rows, 200) and rows > 200
    assert f"{rows} rows in the table (the first 200 by due time shown)" in panel.group(2)


def test_the_committed_reports_leave_their_pages_out():
    """reports/**/view.html is ignored: a committed report's manifest may list a page the
    repository does not have, and that is no error (``outdir.check`` skips missing files)."""
    assert "reports/**/view.html" in (ROOT / ".gitignore").read_text(encoding="utf-8")


# --- what the page shows beyond the bars (in a browser) ---------------------------------------

def _run_page(tmp_path: Path, name: str) -> tuple[Path, dict]:
    out = tmp_path / name
    assert main(["run", str(SCENARIOS / f"{name}.yaml"), "--out", str(out), "--quiet",
                 "--no-plots"]) == 0
    return out / FILE, json.loads((out / "summary.json").read_text())


def _dom_at(page: Path, profile: Path, query: str, tab: str = "") -> str:
    """The DOM of the page opened with ``?query`` (``at=SECONDS``: the time cursor there)."""
    proc = subprocess.run(
        [_chromium(), "--headless=new", "--disable-gpu", "--no-sandbox", "--no-first-run",
         f"--user-data-dir={profile}", "--host-resolver-rules=MAP * ~NOTFOUND",
         "--virtual-time-budget=20000", "--dump-dom",
         page.resolve().as_uri() + f"?{query}" + (f"#{tab}" if tab else "")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r'<body data-errors="0"', proc.stdout), re.search(
        r'<div id="jobsim-errors"[^>]*>([^<]*)', proc.stdout)
    return proc.stdout


def test_in_chromium_the_lesson_shows_node_b_empty_acquisition_and_every_execution(tmp_path):
    """The lesson's central non-event: at t=0 node-B ran its guarded UPDATE and locked
    nothing (node-A had both due rows). The page draws it (an empty acquisition on node-B),
    the cursor at 0 says it in words, and all 7 executions — each of zero length — are drawn
    as bars and as markers."""
    page, summary = _run_page(tmp_path, "lesson")
    dom = _dom_at(page, tmp_path / "profile", "at=0")
    attrs = _section(dom, "0")
    assert attrs["executions"] == attrs["rendered"] == str(summary["executions"]) == "7"
    assert attrs["instants"] == "7"  # zero-length runs: a marker each, none hidden
    assert int(attrs["empty"]) == summary["acquisition"]["empty"] == 4
    assert int(attrs["claims"]) == summary["acquisition"]["attempts"] - 4
    panel = re.search(r'<div class="instant" id="instant-0"[^>]*>(.*?)</table></div>', dom)
    assert panel, "no table at the cursor"
    text = panel.group(1)
    assert "node-A at 0.000 s: claimed 2 rows" in text
    assert "node-B at 0.000 s: empty acquisition: locked nothing" in text
    assert "3 rows in the table" in text  # jobs 1, 2 and 3, none gone yet
    assert 'data-rows="3"' in panel.group(0)


def test_in_chromium_the_zombie_pause_page_shows_two_payments(tmp_path):
    """The guarded variant: two payments (the job's two side effects), the second marked
    as a duplicate; the fencing variant: one payment and one refused effect."""
    page, summary = _run_page(tmp_path, "zombie_pause")
    for key, variant in enumerate(summary["variant_order"]):
        dom = _dom_at(page, tmp_path / f"profile{key}", "at=70", tab=variant)
        attrs = _section(dom, str(key))
        s = summary["variants"][variant]
        assert attrs["variant"] == variant
        dup = s["duplicate_side_effects"]["total"]
        refused = s["side_effects_refused"]
        assert int(attrs["effects-duplicate"]) == dup
        assert int(attrs["effects-refused"]) == refused
        # one effect per job done, plus each duplicate; a refused one is marked too
        assert int(attrs["effects"]) == s["jobs"]["done"] + dup + refused
        if variant in ("guarded", "unguarded"):
            assert attrs["effects"] == "2" and dup == 1


def test_in_chromium_the_retry_storm_page_shows_the_outage_and_the_load(tmp_path):
    page, summary = _run_page(tmp_path, "retry_storm")
    variant = summary["variant_order"][0]
    dom = _dom_at(page, tmp_path / "profile", "at=1", tab=variant)
    attrs = _section(dom, "0")
    assert attrs["services"] == str(len(summary["variants"][variant]["services"])) == "1"
    assert int(attrs["outages"]) >= 1 and int(attrs["load"]) > 0
    assert summary["variants"][variant]["services"]["payments"]["time"]["down"] > 0


def test_the_lock_expiry_note_ties_the_counts():
    """The note says how the lock expiries, the claims that took them and the duplicates
    relate, with the run's own numbers."""
    from jobsim.output.view import data

    for sc in scenario.load_variants(SCENARIOS / "lock_expiry.yaml"):
        a = analyse(run(sc))
        view = data.run_data(a.result.trace, a.histories, a.summary, sc.variant)
        c = view.counts
        assert view.note.startswith(f"{c['lock_expiries']:,} lock")
        dup = a.summary["duplicate_executions"]
        assert f"{dup['total']:,} duplicate execution" in view.note
        for cause, n in dup["by_cause"].items():
            if n:
                assert f"{n:,} {cause.replace('_', ' ')}" in view.note
        page = analyses_page([a])
        assert f'<p class="note">{view.note}</p>' in page.replace("&#x27;", "'")
    quiet = analyse(run(scenario.load(SCENARIOS / "lesson.yaml")))
    assert data.run_data(quiet.result.trace, quiet.histories, quiet.summary, None).note == ""


def test_the_legend_lists_only_what_occurs(small_run):
    page = (small_run / FILE).read_text(encoding="utf-8")
    lesson = analyses_page([analyse(run(scenario.load(SCENARIOS / "lesson.yaml")))])
    legend = re.search(r'<div class="legend">(.*?)</div>', lesson).group(1)
    assert "empty acquisition" in legend and "took no time" in legend
    assert "crash" not in legend and "lock expired" not in legend and "service" not in legend
    assert "duplicate" not in legend
    assert 'class="hue-mode"' in page and 'class="find"' in page


def test_in_chromium_a_search_and_the_colour_switch(tmp_path):
    """``?find=`` highlights the job's executions (by id, or by a part of its name) and
    ``?colour=handler`` recolours them and rewrites the legend with the run's handlers."""
    page, summary = _run_page(tmp_path, "lesson")
    dom = _dom_at(page, tmp_path / "profile", "find=3&colour=handler")
    found = re.search(r'<span class="found" id="found-0" data-found="(\d+)">([^<]*)', dom)
    assert found and found.group(1) == "3", found  # job 3 ran three times, then dead-lettered
    legend = re.search(r'<span class="hue" data-mode="outcome"[^>]*>(.*?)</span></span>\s*'
                       r'<span class="item"><span class="glyph">', dom, re.S)
    assert legend, "the legend's colours are missing"
    for handler in ("bureau-call", "misconfigured", "reminder"):
        assert f"handler {handler}" in legend.group(1)
    assert "failed (will retry)" not in legend.group(1)
    assert summary["executions"] == 7


def test_in_chromium_the_zombie_payment_story(tmp_path):
    """``?job=1`` tells the payment's story: two claims, two runs, its two payments (the
    second a duplicate) in the guarded variant."""
    page, summary = _run_page(tmp_path, "zombie_pause")
    dom = _dom_at(page, tmp_path / "profile", "job=1", tab="guarded")
    story = re.search(r'<aside class="story" id="story-0" data-job="1">(.*?)</aside>', dom,
                      re.S)
    assert story, "no story told"
    text = story.group(1)
    assert "claimed by node-A" in text and "claimed by node-B" in text
    assert text.count("its side effect at its end") == 1  # node-A's, the first payment
    assert text.count("duplicate side effect") == 1  # node-B's, the second
    assert summary["variants"]["guarded"]["duplicate_side_effects"]["total"] == 1


def test_the_counts_by_colour_say_a_duplicate_is_counted_in_its_colour_alone():
    """The page's counts are by colour, one per execution: zombie_pause's node-B run is a
    duplicate there (not also done), and the line says so; the lesson, with no duplicate,
    rejected completion or cut run, has no such clause."""
    from jobsim.output.view.page import counts_line
    from jobsim.output.view.data import run_data

    for name, said in (("zombie_pause.yaml", True), ("lesson.yaml", False)):
        a = analyse(run(scenario.load_variants(SCENARIOS / name)[0]))
        line = counts_line(run_data(a.result.trace, a.histories, a.summary, None), a.summary)
        assert "by colour: " in line
        assert ("counted in that colour alone, not also as done or failed" in line) == said, \
            line


def test_the_pages_json_escapes_every_control_character_on_its_fast_path_too():
    """``_json`` skips the escaping pass where the JSON is ASCII without DEL (JSON escapes
    the C0 controls itself); DEL, the C1 controls and the bidirectional overrides are still
    escaped, and ``<`` always."""
    import json as _json_module

    from jobsim.output.view.page import _json

    for value, want in (({"a": "plain"}, '{"a":"plain"}'),
                        ({"a": "x\x7fy"}, '{"a":"x\\u007fy"}'),
                        ({"a": "\x85", "b": "\u202e"}, '{"a":"\\u0085","b":"\\u202e"}'),
                        ({"a": "\x1b]0;t\x07</script>"},
                         '{"a":"\\u001b]0;t\\u0007\\u003c/script>"}'),
                        ({"a": "café 注文"}, '{"a":"café 注文"}')):
        got = _json(value)
        assert got == want and _json_module.loads(got) == value, (value, got)
