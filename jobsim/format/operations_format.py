"""The file's ``operations``: an operator's (or a script's) actions on jobs, at instants."""

from __future__ import annotations

from .spec import Dur, Either, Int, ListOf, Obj, Str, is_map_with


def _on(kind: str, doc: str, **more) -> tuple:
    return (is_map_with(kind), Obj({"at": Dur(), kind: Str(doc=doc), **more}, ("at", kind)))


OPERATIONS = ListOf(Either([
    _on("retry", "a failed task's name, or all"),
    _on("cancel", "a failed task's name, or all"),
    _on("move", "a dead-lettered job's name, or all", retries=Int(lo=1, hi=1_000_000)),
    _on("suspend", "a waiting job's name, or all"),
    _on("activate", "a suspended job's name, or all"),
    _on("fail", "an activated job's name, or all (the Zeebe-like server's POST "
                "/jobs/{key}/fail)",
        retries=Int(lo=-1_000_000, hi=1_000_000,
                    doc="fail: the retries left, stored as sent (omitted: 0); above 0 the job "
                        "waits again at once, else an incident"),
        error=Str(doc="fail: the errorMessage")),
], "{at, retry: NAME|all}, {at, cancel: NAME|all}, {at, move: NAME|all, retries}, "
   "{at, suspend: NAME|all}, {at, activate: NAME|all} or {at, fail: NAME|all, retries, error}"),
    max_len=10_000,
    doc="an operator's actions: retry or cancel a failed task (failsafe-executor), move a dead "
        "letter back (Flowable), suspend or activate a job, fail an activated job whose worker "
        "is gone (the Zeebe-like server); one that names a job it cannot act on does nothing, "
        "and the run says so (operation_ignored)")
