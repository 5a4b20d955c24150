"""The operations a scenario's file may carry out (``sim/operations.py`` runs them): where
each takes its jobs from, what it acts on in words, and where an ignored one found its job
(the ``a`` of an ``operation_ignored`` event)."""

from __future__ import annotations

from ..database.store import DEADLETTER, FAILED, JOB, SUSPENDED, TIMER

#: operation -> the tables it takes jobs from
OPERATIONS = {"retry": (FAILED,), "cancel": (FAILED,), "move": (DEADLETTER,),
              "suspend": (JOB, TIMER), "activate": (SUSPENDED,), "fail": (JOB, TIMER)}
#: what each operation acts on, in words
ACTS_ON = {"retry": "a failed task", "cancel": "a failed task", "move": "a dead letter",
           "suspend": "a waiting job", "activate": "a suspended job",
           "fail": "an activated job whose worker is gone"}
#: where an ignored operation found its job: the ``a`` of ``operation_ignored``
WHERE = ("gone (done, cancelled or withdrawn)",
         "waiting", "held by a node", "in the dead-letter table", "failed",
         "an incident", "suspended", "held by a worker that still runs or holds it")
