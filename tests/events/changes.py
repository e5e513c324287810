"""Change events made for tests that need one of a given cursor, not a real write."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from signoff.events.hub import Change


def task_created(cursor: int, **fields: Any) -> Change:
    """A ``task.created`` change of task ``t{cursor}`` in queue ``q``, occurring now;
    ``fields`` give the rest or replace these."""
    made: dict[str, Any] = {
        "cursor": cursor,
        "kind": "task.created",
        "entity_type": "task",
        "entity_id": f"t{cursor}",
        "queue_id": "q",
        "proposal_id": None,
        "actor_id": None,
        "occurred_at": datetime.now(UTC),
    }
    return Change(**(made | fields))
