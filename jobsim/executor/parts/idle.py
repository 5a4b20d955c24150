"""The idle sleep of an acquisition loop: polls that nothing can change are counted, not
simulated.

When a poll finds nothing and no row can become eligible before a later poll, the loop sleeps
until the last poll instant at or before the soonest row (a poll there may see it if its
statement takes long enough) or until the table changes; a notify node then polls at once
after an insert, any other node resumes its poll schedule. The polls slept through are
counted and traced as one ``polls_skipped`` event, so an idle month costs a handful of events.
A pause while asleep re-plans the polls around it.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from ...base.trace import K

if TYPE_CHECKING:
    from ..node import Node


def sleep_until_due(node: Node, table: str, now: float, next_poll: float, step: float,
                    soonest: float | None, notify: bool) -> Generator[Any, Any, None]:
    """Sleep through the polls of ``table`` that cannot find anything (the next would be at
    ``next_poll``, then every ``step``), until ``soonest`` or a change to the table."""
    env, db, end = node.env, node.db, node.world.scenario.end
    # Idle: no poll before ``soonest`` can find anything unless the table changes.
    # Sleep until the last poll instant at or before ``soonest`` (a poll there may
    # see it if its statement takes long enough) or until the table changes; a
    # notify node then polls at once after an insert, any other node resumes its
    # poll schedule. The polls slept through are counted, not simulated. The poll
    # instants of a naive loop are ``step = poll_interval + statement latency`` apart
    # (a poll, then a sleep); with a random latency its mean stands in for it.
    changed = db.changed()
    node._asleep[table] = (next_poll, step)
    target = math.inf
    if soonest is not None:
        target = next_poll + math.floor((soonest - next_poll) / step) * step
    if target >= end:
        target = math.inf
    replan = None
    if node._pausable:
        node._replan[table] = replan = env.event()
        yield first_of(node.env, (changed, replan),
                          None if target == math.inf else target - now)
    elif target == math.inf:
        yield changed  # the common idle wait: one event, no helper
    else:
        yield first_of(node.env, (changed,), target - now)
    del node._asleep[table]
    if replan is not None:
        del node._replan[table]
    now = env.now
    if replan is not None and replan.triggered:
        # Paused while asleep: the polls before the pause found nothing; a poll that
        # fell due during the pause happens when it ends, and the grid restarts there.
        paused_at = now
        if node._paused is not None:
            yield node._paused
        skipped = max(0, math.ceil((paused_at - next_poll) / step))
        tick = next_poll + skipped * step
        if tick > env.now:
            yield env.timeout(tick - env.now)
    elif now >= target:
        skipped = round((target - next_poll) / step)
    else:
        skipped = max(0, math.ceil((now - next_poll) / step))
        if not (notify and changed.triggered and changed.value):
            resume = next_poll + skipped * step
            if resume > now:
                if notify:  # an insert meanwhile still wakes a notify node at once
                    yield env.any_of([env.timeout(resume - now), db.inserted()])
                else:
                    yield env.timeout(resume - now)
    if skipped > 0:
        node.polls += skipped
        node.polls_skipped += skipped
        node.trace.add(env.now, K["polls_skipped"], node.code, a=skipped)



def first_of(env, events: tuple[Any, ...], delay: float | None) -> Any:
    """An event that fires when the first of ``events`` does, or when ``delay`` (if not
    None) has passed (a lighter ``any_of`` for the idle loop)."""
    wake = env.event()

    def fire(_: Any) -> None:
        if not wake.triggered:
            wake.succeed()

    for event in events:
        event.callbacks.append(fire)
    if delay is not None:
        env.timeout(delay).callbacks.append(fire)
    return wake
