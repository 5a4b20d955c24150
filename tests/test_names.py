"""Names with control characters never reach a terminal or a file raw.

A node, handler, service, job, stream or queue may be named anything a YAML string holds —
``"n\\e]0;pwned\\a"`` (an OSC sequence that retitles a terminal), ``"\\e[2J"`` (clear the
screen), a C1 CSI, a carriage return, a right-to-left override. A scenario with such names is
run end to end by the command line (``python -m jobsim``, its real stdout and stderr, and
``jobsim view`` of its folder): no character below 0x20 but newline and tab, none from 0x7f
to 0x9f, and none of Unicode's line separators or bidirectional controls comes out on stdout
or stderr, or is written into jobs.csv, trace.csv, report.md, violations.txt or view.html;
each shows as its escape (``\\u001b``), and ordinary Unicode names stay as they are.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT
from jobsim.base.printable import PrintableStream, printable
from jobsim.cli import main

NODE = "n\x1b]0;pwned\x07"  # OSC: retitles the terminal
HANDLER = "h\x1b[2J"  # clears the screen
SERVICE = "svc\x9b31m"  # a C1 CSI: red
JOB = "job\rX"  # a carriage return: writes over its own line
STREAM = "s\u202eevil"  # a right-to-left override
QUEUE = "q\x00\x7f"
PLAIN = "café-注文-🙂"  # ordinary Unicode: kept

#: what may not come out: C0 but newline and tab, DEL, C1, line separators, bidi controls
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def scenario(tmp_path: Path) -> Path:
    doc = {
        "name": "names", "seed": 3, "until": "drained",
        "nodes": [{"name": NODE}, {"name": PLAIN}],
        "services": {SERVICE: {"latency": "10ms"}},
        "handlers": {
            HANDLER: {"duration": "1s", "outcome": {"fail_first": 1},
                      "error": f"failed in {NODE} (attempt {{attempt}})"},
            "calls": {"calls": [{"service": SERVICE, "timeout": "1s"}]},
            PLAIN: {"duration": "2s"},
        },
        "workload": {
            "jobs": [{"name": JOB, "handler": HANDLER},
                     {"name": "q1", "handler": PLAIN, "queue": QUEUE},
                     {"name": "q2", "handler": PLAIN, "queue": QUEUE}],
            "streams": [{"name": STREAM, "handler": "calls", "count": 3}],
        },
        "faults": [{"at": "500ms", "pause": NODE, "for": "10m"}],
        "expect": {f"named.{JOB}.executions": "== 99"},  # missed: the names in the verdict
    }
    path = tmp_path / "names.yaml"
    path.write_text(yaml.safe_dump(doc, allow_unicode=True), encoding="utf-8")
    return path


def raw_in(text: str) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for c in RAW.findall(text)})


def test_printable_escapes_control_characters_and_keeps_unicode():
    assert printable(NODE) == "n\\u001b]0;pwned\\u0007"
    assert printable("a\nb\tc") == "a\\u000ab\\u0009c"
    assert printable("a\nb\tc\x1b", lines=True) == "a\nb\tc\\u001b"
    assert printable(PLAIN) is PLAIN  # nothing to do: the very same string
    assert printable("\x85\u2028\u202e") == "\\u0085\\u2028\\u202e"


def test_a_printable_stream_escapes_what_is_written_through_it():
    import io

    raw = io.StringIO()
    stream = PrintableStream(raw)
    print(f"node {NODE} and {PLAIN}", file=stream)
    assert raw.getvalue() == f"node n\\u001b]0;pwned\\u0007 and {PLAIN}\n"


def test_names_with_control_characters_run_end_to_end(tmp_path):
    path = scenario(tmp_path)
    out = tmp_path / "run"
    env = {**os.environ, "JOBSIM_PROGRESS": "0", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "jobsim", "run", str(path), "--out",
                           str(out)], env=env, capture_output=True, cwd=tmp_path)
    stdout = proc.stdout.decode("utf-8")
    stderr = proc.stderr.decode("utf-8")
    assert proc.returncode == 1, stderr  # the expectation is missed, on purpose
    assert raw_in(stdout) == [] and raw_in(stderr) == []
    assert "n\\u001b]0;pwned\\u0007" in stdout and PLAIN in stdout  # shown, escaped
    assert "job\\u000dX" in stdout  # the missed expectation names the job
    assert "Traceback" not in stderr
    files = {p.name: p.read_text(encoding="utf-8") for p in out.rglob("*")
             if p.suffix in (".csv", ".md", ".txt", ".html")}
    assert {"jobs.csv", "trace.csv", "report.md", "view.html"} <= set(files)
    for name, text in files.items():
        assert raw_in(text) == [], name
    assert "n\\u001b]0;pwned\\u0007" in files["trace.csv"]
    assert "job\\u000dX" in files["jobs.csv"]
    assert "h\\u001b[2J" in files["jobs.csv"] and PLAIN in files["jobs.csv"]
    assert "svc\\u009b31m" in files["report.md"]
    # and the page rebuilt from the folder is the run's own, byte for byte
    page = (out / "view.html").read_bytes()
    assert main(["view", str(out), "--out", str(tmp_path / "again.html")]) == 0
    assert (tmp_path / "again.html").read_bytes() == page


def test_an_error_naming_such_a_name_is_printed_escaped(tmp_path, capsys):
    path = scenario(tmp_path)
    status = main(["run", str(path), "--out", str(tmp_path / "o"),
                   "--set", f"handlers.x{NODE}.duration=1s"])
    err = capsys.readouterr().err
    assert status == 2 and raw_in(err) == []
    assert "--set handlers.xn\\u001b]0;pwned\\u0007.duration" in err


@pytest.mark.parametrize("command", ["sweep", "hunt"])
def test_sweep_and_hunt_tables_and_pages_are_escaped(command, tmp_path, capsys):
    path = scenario(tmp_path)
    out = tmp_path / command
    args = ["--grid", "seed=1"] if command == "sweep" else ["--break", "liveness",
                                                             "--budget", "2"]
    if command == "sweep":
        args = ["--grid", "executor.lock_time=30s,60s", "--replications", "1"]
    main([command, str(path), "--workers", "1", "--out", str(out), *args])
    captured = capsys.readouterr()
    assert raw_in(captured.out) == [] and raw_in(captured.err) == []
    for p in out.rglob("*"):
        if p.suffix in (".csv", ".md", ".txt", ".html", ".yaml"):
            assert raw_in(p.read_text(encoding="utf-8")) == [], p.name
