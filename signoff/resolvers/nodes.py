"""Global object identification (Relay's ``node``): find an object by its id alone.

Every id is a UUIDv7 and unique across tables, so an id names one object whatever its
type. Looking one up applies the same visibility rules as that type's own getter.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import PAGE_SIZE_MAX
from signoff.errors import NotFound, SignoffError, ValidationFailed
from signoff.models import HumanTask, Incident, Proposal, Queue, Target
from signoff.resolvers import incident_response, proposals, queues, targets, tasks
from signoff.resolvers.access import Viewer

NodeModel = Proposal | HumanTask | Queue | Target | Incident

# Each kind of node: its table, and the getter that applies its visibility rules.
KINDS: tuple[tuple[type[NodeModel], Callable[..., Awaitable[Any]], str], ...] = (
    (Proposal, proposals.get_proposal, "proposal_id"),
    (HumanTask, tasks.get_task, "task_id"),
    (Queue, queues.get_queue, "queue_id"),
    (Target, targets.get_target, "target_id"),
    (Incident, incident_response.get_incident, "incident_id"),
)


def _well_formed(node_id: str) -> bool:
    try:
        return str(uuid.UUID(node_id)) == node_id
    except ValueError:
        return False


async def get_node(*, session: AsyncSession, viewer: Viewer, node_id: str) -> NodeModel:
    """The object with this id; ``NOT_FOUND`` for an id no object has, malformed ones too."""
    if _well_formed(node_id):
        for model, getter, argument in KINDS:
            if await session.get(model, node_id) is not None:
                found: NodeModel = await getter(
                    session=session, viewer=viewer, **{argument: node_id}
                )
                return found
    raise NotFound("No object has this id.")


async def get_nodes(
    *, session: AsyncSession, viewer: Viewer, node_ids: Sequence[str]
) -> list[NodeModel | SignoffError]:
    """Each id's object, or the refusal reading it alone would get, in the order asked."""
    if len(node_ids) > PAGE_SIZE_MAX:
        raise ValidationFailed(f"At most {PAGE_SIZE_MAX} ids at once.", field="ids")
    results: list[NodeModel | SignoffError] = []
    for node_id in node_ids:
        try:
            results.append(await get_node(session=session, viewer=viewer, node_id=node_id))
        except SignoffError as refusal:
            results.append(refusal)
    return results
