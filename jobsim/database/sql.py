"""The SQL each claim strategy stands for, in one place.

These are the statements ``jobsim race`` runs against a real SQLite or PostgreSQL, and the
texts ``claims.SQL`` shows for each strategy: the model's strategies are these statements.
PostgreSQL parameters are psycopg's ``%(name)s``; SQLite's are ``:name``, with ``:now`` the
client's clock and ``{ids}`` a list of ``?`` filled in per call.
"""

from __future__ import annotations

# Real executors lock for seconds to minutes; the harness locks for a day, far beyond its
# time limit, so that no lock expires during a race and every second claim of a job is a
# double acquisition, never an expiry.
_PG_SET = ("UPDATE job SET locked_by = %(me)s, lock_until = now() + interval '1 day', "
           "version = version + 1")
_PG_DUE = "due <= now() AND (locked_by IS NULL OR lock_until < now())"
_PG_TOP = f"SELECT id FROM job WHERE {_PG_DUE} ORDER BY priority DESC, id LIMIT %(n)s"

POSTGRES = {
    "A": f"{_PG_SET} WHERE id IN ({_PG_TOP}) AND (locked_by IS NULL OR lock_until < now()) "
         "RETURNING id",
    "B": f"{_PG_SET} WHERE id IN ({_PG_TOP}) RETURNING id",
    "C_SEL": _PG_TOP,
    "C_UPD": f"{_PG_SET} WHERE id = ANY(%(ids)s) RETURNING id",
    "D_SEL": f"SELECT id, version FROM job WHERE {_PG_DUE} ORDER BY priority DESC, id "
             "LIMIT %(n)s",
    "D_UPD": f"{_PG_SET} WHERE id = %(id)s AND version = %(v)s",
    "E_SEL": f"{_PG_TOP} FOR UPDATE SKIP LOCKED",
    "E_UPD": f"{_PG_SET} WHERE id = ANY(%(ids)s) RETURNING id",
    "E1": f"{_PG_SET} WHERE id IN ({_PG_TOP} FOR UPDATE SKIP LOCKED) RETURNING id",
    "ANY_LEFT": f"SELECT EXISTS (SELECT 1 FROM job WHERE {_PG_DUE})",
}

_SQ_SET = ("UPDATE job SET locked_by = :me, lock_until = :now + 86400.0, "
           "version = version + 1")
_SQ_DUE = "due <= :now AND (locked_by IS NULL OR lock_until < :now)"
_SQ_TOP = f"SELECT id FROM job WHERE {_SQ_DUE} ORDER BY priority DESC, id LIMIT :n"

SQLITE = {
    "A": f"{_SQ_SET} WHERE id IN ({_SQ_TOP}) AND (locked_by IS NULL OR lock_until < :now) "
         "RETURNING id",
    "B": f"{_SQ_SET} WHERE id IN ({_SQ_TOP}) RETURNING id",
    "C_SEL": _SQ_TOP,
    "C_UPD": f"{_SQ_SET} WHERE id IN ({{ids}}) RETURNING id",
    "D_SEL": f"SELECT id, version FROM job WHERE {_SQ_DUE} ORDER BY priority DESC, id "
             "LIMIT :n",
    "D_UPD": f"{_SQ_SET} WHERE id = :id AND version = :v",
    "ANY_LEFT": f"SELECT EXISTS (SELECT 1 FROM job WHERE {_SQ_DUE})",
}

#: what each of the model's strategies runs (PostgreSQL's text; SQLite's is the same shape)
STRATEGY_SQL = {
    "guarded_update": POSTGRES["A"],
    "unguarded_update": POSTGRES["B"],
    "read_then_write": POSTGRES["C_SEL"] + "; then " + POSTGRES["C_UPD"],
    "skip_locked": POSTGRES["E_SEL"] + "; then " + POSTGRES["E_UPD"] + "; COMMIT",
    "optimistic": POSTGRES["D_SEL"] + "; then per row: " + POSTGRES["D_UPD"],
}
