"""A database profile: a real database's claim statements as measured on one machine.

``jobsim race --calibrate FILE`` writes one; a scenario uses it with ``db: {profile: FILE}``
(a path relative to the scenario's folder) or the same figures inline. Per strategy it holds
each statement's service time (``select``, ``update``; ``commit`` where the transaction
commits on its own), the client's time before an attempt's first statement
(``between_attempts``) and before each other (``between_statements``), and on PostgreSQL the
share of a statement's time that is the client's own CPU (``client_cpu``, the rest being the
server's). ``machine`` says how many cores the measuring machine had and how long the
scheduler let a process run while others waited (``quantum``); ``statement`` (optional) is a
single-row UPDATE, the latency a scenario with a profile gives every statement that is not a
claim. ``cpu_wait`` and ``attempts`` record the measurement; the model does not use them.

Example::

    dialect: sqlite
    machine: {cores: 2, quantum: 1.5ms}
    strategies:
      read_then_write:
        select: {lognormal: {median: 0.031ms, p99: 0.09ms}}
        update: {lognormal: {median: 0.052ms, p99: 0.2ms}}
        between_attempts: {lognormal: {median: 0.02ms, p99: 0.06ms}}
        between_statements: {lognormal: {median: 0.012ms, p99: 0.03ms}}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..base.errors import Problem, ScenarioError
from .spec import Dur, Enum, Field, Int, MapOf, Num, Obj, Str, show, suggest

PROFILE_DIALECTS = ("postgres", "sqlite")
PROFILE_STRATEGIES = ("guarded_update", "unguarded_update", "read_then_write", "optimistic",
                      "skip_locked")


def profile_format(dist: Field) -> Obj:
    """The profile's keys, durations as ``dist`` reads them."""
    figures = Obj({
        "select": dist, "update": dist, "commit": dist, "update_unchanged": dist,
        "between_attempts": dist, "between_statements": dist,
        "select_per_row": Dur(0.0, hi=1.0, doc="a SELECT's time per locked row it passes"),
        "update_per_row": Dur(0.0, hi=1.0, doc="an UPDATE's time per locked row its "
                                               "subquery passes"),
        "server_tail": Dur(0.0, hi=1.0, doc="PostgreSQL: CPU per statement after its answer "
                                           "(the server's, its background processes', the "
                                           "kernel's), beside the client"),
        "unchanged_cpu": Num(doc="PostgreSQL: the share of a statement's way there and back "
                             "(update_unchanged) spent on a core (without it, server_cpu)",
                             lo=0.0, hi=1.0),
        "server_cpu": Num(1.0, "PostgreSQL: the share of a statement's server time (its "
                          "time less the client's CPU) spent on a core; the rest waits "
                          "with no core (waking up, the sockets)", lo=0.0, hi=1.0),
        "client_cpu": Num(1.0, "the client's own CPU in a statement's time (PostgreSQL)",
                          lo=0.0, hi=1.0),
        "cpu_wait": Num(0.0, "measured: the share of the time the worker waited for a core",
                        lo=0.0, hi=1.0),
        "attempts": Int(0, "measured: how many attempts the figures come from", lo=0,
                        hi=10 ** 9),
        "isolation": Str("read_committed", "measured under (PostgreSQL)"),
        "begin": Str("autocommit", "measured with (SQLite's read_then_write)"),
    }, ("select", "update", "between_attempts", "between_statements"))
    return Obj({
        "dialect": Enum(PROFILE_DIALECTS, doc="the database measured"),
        "machine": Obj({"cores": Int(lo=1, hi=4096, doc="the measuring machine's cores"),
                        "quantum": Dur(0.003, positive=True, hi=1.0,
                                       doc="how long a process ran while others waited"),
                        "handover": Dur(0.0, hi=1.0, doc="PostgreSQL: what a hand-over "
                                        "between client and server saves when the other "
                                        "cores are busy")},
                       ("cores",)),
        "statement": dist,
        "measured": Obj({"at": Str("", nonempty=False), "jobs": Int(0, lo=0, hi=10 ** 9),
                         "batch": Int(0, lo=0, hi=10 ** 9),
                         "database": Str("", nonempty=False),
                         "warm_up": Str("", nonempty=False)}),
        "strategies": MapOf(figures, doc="per claim strategy"),
    }, ("dialect", "machine", "strategies"))


def resolve(doc: dict[str, Any], source: str) -> dict[str, Any]:
    """``doc`` with a ``db.profile`` file read in its place (relative to the scenario's
    folder); a missing or unreadable file is the scenario's problem at ``db.profile``, a
    malformed one names the profile file and the path inside it."""
    db = doc.get("db")
    path = db.get("profile") if isinstance(db, dict) else None
    if isinstance(path, dict) and "dialect" not in db and path.get("dialect") in \
            PROFILE_DIALECTS:
        return {**doc, "db": {**db, "dialect": path["dialect"]}}  # the profile's database
    if not isinstance(path, str):
        return doc
    from .reading import read

    base = Path(source).parent if source and not source.startswith("<") else Path(".")
    file = Path(path) if Path(path).is_absolute() else base / path
    if not file.is_file():
        raise ScenarioError([Problem("db.profile", "a profile file (jobsim race --calibrate "
                                     "writes one)", f"{path!r}: no such file")], source)
    try:
        content = read(file)
    except ScenarioError as exc:  # not YAML, too big…: the profile file's own problems
        raise exc.with_source(str(file)) from None
    from .fileformat import PROFILE

    problems: list[Problem] = []
    PROFILE.check(content, "", problems)
    if problems:
        raise ScenarioError(problems, str(file))
    return resolve({**doc, "db": {**db, "profile": content}}, source)


def profile_checks(v: dict[str, Any], strategies: list[tuple[str, str]],
                   problems: list[Problem]) -> None:
    """A profile of the scenario's database with figures for every node's strategy (given
    as ``(where, strategy)``); a CPU model on a database with statements."""
    db = v.get("db") if isinstance(v.get("db"), dict) else {}
    dialect, profile = db.get("dialect", "atomic"), db.get("profile")
    if isinstance(profile, dict):
        if profile.get("dialect") not in (None, dialect):
            problems.append(Problem("db.dialect", f"{profile['dialect']}, the profile's "
                                    "database", show(dialect)))
        measured = profile.get("strategies") or {}
        for name, fig in measured.items() if isinstance(measured, dict) else ():
            if name not in PROFILE_STRATEGIES:
                problems.append(Problem(f"db.profile.strategies.{name}", "a claim strategy "
                                        "a race measures (" + ", ".join(PROFILE_STRATEGIES)
                                        + ")", show(name), suggest(name, PROFILE_STRATEGIES)))
            fig = fig if isinstance(fig, dict) else {}
            for key, mine in (("isolation", db.get("isolation", "read_committed")),
                              ("begin", db.get("sqlite_begin", "autocommit"))):
                if key in fig and fig[key] != mine and any(s == name for _, s in strategies):
                    setting = "isolation" if key == "isolation" else "sqlite_begin"
                    problems.append(Problem(f"db.{setting}", f"{fig[key]}, as the profile "
                                            f"measured {name}", show(mine), "measure it with "
                                            f"--{'isolation' if key == 'isolation' else 'begin'}"
                                            f" {mine}"))
        for where, strategy in strategies:
            if isinstance(measured, dict) and strategy not in measured:
                problems.append(Problem(where, "a strategy the profile measured ("
                                        + (", ".join(measured) or "none") + ")",
                                        show(strategy), "jobsim race --calibrate --strategy "
                                        f"{strategy} measures it"))
                break
    if "cpu" in db and not isinstance(db["cpu"], dict):
        return  # the field check has said what it expected
    if "cpu" in db and dialect == "atomic":
        problems.append(Problem("db.cpu", "db.dialect postgres or sqlite (the atomic dialect's "
                                "statements take no CPU)", "db.dialect atomic"))
    if "cpu" in db and "cores" not in db["cpu"] and not isinstance(profile, dict):
        problems.append(Problem("db.cpu.cores", "a number of cores (or a profile, whose "
                                "machine's are taken)", "none"))
    if db.get("sqlite_busy") == "sleep" and dialect != "sqlite":
        problems.append(Problem("db.sqlite_busy", "db.dialect sqlite", show(dialect)))
