"""Global object identification (Relay's ``node``): find an object by its id alone.

A lookup applies the visibility of the type's own read path, and what the viewer may not
see is ``NOT_FOUND`` like an unknown id, so ``node`` tells nobody which ids exist
(docs/design.md section 3).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlmodel import SQLModel, col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import PAGE_SIZE_MAX
from signoff.errors import Forbidden, NotFound, SignoffError, ValidationFailed
from signoff.models import (
    Actor,
    ApiToken,
    Approval,
    ApprovalLink,
    AuditEvent,
    DeadLetter,
    Delegation,
    DeliveryAttempt,
    Draft,
    HumanTask,
    Incident,
    NotificationChannel,
    Proposal,
    ProposalRevision,
    Queue,
    ReconciliationRun,
    RepairAction,
    Role,
    Target,
)
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval import proposals, queues, tasks
from signoff.resolvers.drafts.reads import may_read
from signoff.resolvers.incidents import response as incident_response
from signoff.resolvers.targets import targets

NodeModel = (
    Proposal
    | HumanTask
    | Queue
    | Target
    | Incident
    | Actor
    | Approval
    | ApprovalLink
    | AuditEvent
    | DeadLetter
    | Delegation
    | DeliveryAttempt
    | Draft
    | NotificationChannel
    | ProposalRevision
    | ReconciliationRun
    | RepairAction
    | ApiToken
)

REVISION_PREFIX = "ProposalRevision:"


def revision_node_id(proposal_id: str, revision: int) -> str:
    """The global id of a proposal's revision (opaque to clients, stable across amendments)."""
    raw = f"{REVISION_PREFIX}{proposal_id}:{revision}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _revision_of(node_id: str) -> tuple[str, int] | None:
    """The proposal id and revision number a revision's global id names, if it is one."""
    if not 64 <= len(node_id) <= 96:  # prefix, a UUID and up to 9 digits, in base64
        return None
    try:
        raw = base64.urlsafe_b64decode(node_id + "=" * (-len(node_id) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if not raw.startswith(REVISION_PREFIX):
        return None
    proposal_id, _, number = raw.removeprefix(REVISION_PREFIX).rpartition(":")
    if not (_well_formed(proposal_id) and number.isdigit() and len(number) <= 9):
        return None
    if revision_node_id(proposal_id, int(number)) != node_id:
        return None  # one spelling per revision
    return proposal_id, int(number)


def _well_formed(node_id: str) -> bool:
    try:
        return str(uuid.UUID(node_id)) == node_id
    except ValueError:
        return False


Check = Callable[[AsyncSession, Viewer, Any], Awaitable[None]]


async def _proposal_visible(session: AsyncSession, viewer: Viewer, row: Any) -> None:
    await proposals.get_proposal(session=session, viewer=viewer, proposal_id=row.proposal_id)


async def _staff(session: AsyncSession, viewer: Viewer, row: Any) -> None:
    require_role(viewer, Role.OPERATOR)


async def _admin(session: AsyncSession, viewer: Viewer, row: Any) -> None:
    require_role(viewer, Role.ADMIN)


async def _self_or_staff(session: AsyncSession, viewer: Viewer, row: Actor) -> None:
    if row.id != viewer.id:
        require_role(viewer, Role.OPERATOR)


async def _link_visible(session: AsyncSession, viewer: Viewer, row: ApprovalLink) -> None:
    # As revokeApprovalLink: its reviewer, its maker, operators and admins.
    if viewer.id not in (row.reviewer_id, row.created_by_id):
        require_role(viewer, Role.OPERATOR)


async def _delegation_visible(session: AsyncSession, viewer: Viewer, row: Delegation) -> None:
    if viewer.id not in (row.actor_id, row.delegate_id):
        require_role(viewer, Role.OPERATOR)


async def _draft_visible(session: AsyncSession, viewer: Viewer, row: Draft) -> None:
    if not may_read(viewer, row.account_id):
        raise Forbidden("Not your draft.")


def _getter(getter: Callable[..., Awaitable[Any]], argument: str) -> Check:
    """The type's own getter: the row is already in the session, so it reads nothing more."""

    async def check(session: AsyncSession, viewer: Viewer, row: Any) -> None:
        await getter(session=session, viewer=viewer, **{argument: row.id})

    return check


@dataclass(frozen=True)
class Kind:
    """A table whose rows are nodes, and who may see one of them."""

    model: type[SQLModel]
    check: Check
    # Rows of these kinds belong to a proposal, read with the others before any check.
    of_proposal: bool = False


KINDS: tuple[Kind, ...] = (
    Kind(Proposal, _getter(proposals.get_proposal, "proposal_id")),
    Kind(HumanTask, _getter(tasks.get_task, "task_id")),
    Kind(Queue, _getter(queues.get_queue, "queue_id")),
    Kind(Target, _getter(targets.get_target, "target_id")),
    Kind(Incident, _getter(incident_response.get_incident, "incident_id")),
    Kind(Approval, _proposal_visible, of_proposal=True),
    Kind(DeliveryAttempt, _proposal_visible, of_proposal=True),
    Kind(ProposalRevision, _proposal_visible, of_proposal=True),
    Kind(ApprovalLink, _link_visible),
    Kind(Actor, _self_or_staff),
    Kind(Delegation, _delegation_visible),
    Kind(Draft, _draft_visible),
    Kind(NotificationChannel, _staff),
    Kind(AuditEvent, _staff),
    Kind(DeadLetter, _staff),
    Kind(RepairAction, _staff),
    Kind(ReconciliationRun, _staff),
    Kind(ApiToken, _admin),  # as ``tokens``: admins only
)
REVISION = next(kind for kind in KINDS if kind.model is ProposalRevision)
# Kinds found by their row's id (a revision's id is made of its proposal's, above).
ROW_KINDS = tuple(kind for kind in KINDS if kind is not REVISION)


async def _locate_rows(session: AsyncSession, ids: list[str]) -> dict[str, tuple[Kind, Any]]:
    """Each row id's kind and row: one statement finds the kinds, one per kind reads rows."""
    if not ids:
        return {}
    tables: list[Any] = [kind.model.__table__ for kind in ROW_KINDS]  # type: ignore[attr-defined]
    which = sa.union_all(
        *(
            sa.select(sa.literal(index).label("kind"), table.c.id).where(table.c.id.in_(ids))
            for index, table in enumerate(tables)
        )
    )
    connection = await session.connection()
    by_kind: dict[int, list[str]] = {}
    for index, row_id in (await connection.execute(which)).all():
        by_kind.setdefault(index, []).append(row_id)
    found: dict[str, tuple[Kind, Any]] = {}
    for index, row_ids in by_kind.items():
        kind = ROW_KINDS[index]
        model: Any = kind.model
        for row in (await session.exec(select(model).where(col(model.id).in_(row_ids)))).all():
            found[row.id] = (kind, row)
    return found


async def _locate_revisions(
    session: AsyncSession, wanted: dict[str, tuple[str, int]]
) -> dict[str, tuple[Kind, Any]]:
    """Each revision id's revision: a stored row, or the proposal as it stands when it was
    never amended (its only revision, 1)."""
    if not wanted:
        return {}
    proposal_ids = sorted({proposal_id for proposal_id, _ in wanted.values()})
    stmt = select(ProposalRevision).where(col(ProposalRevision.proposal_id).in_(proposal_ids))
    stored = {(r.proposal_id, r.revision): r for r in (await session.exec(stmt)).all()}
    amended = {proposal_id for proposal_id, _ in stored}
    found: dict[str, tuple[Kind, Any]] = {}
    for node_id, (proposal_id, number) in wanted.items():
        row = stored.get((proposal_id, number))
        if row is None and number == 1 and proposal_id not in amended:
            proposal = await session.get(Proposal, proposal_id)  # already read: no statement
            if proposal is not None:
                row = ProposalRevision(
                    proposal_id=proposal.id,
                    revision=1,
                    payload=proposal.payload,
                    payload_digest=proposal.payload_digest,
                    diff=[],
                    created_at=proposal.created_at,
                )
        if row is not None:
            found[node_id] = (REVISION, row)
    return found


async def _locate(session: AsyncSession, node_ids: Sequence[str]) -> dict[str, tuple[Kind, Any]]:
    row_ids = sorted({node_id for node_id in node_ids if _well_formed(node_id)})
    revisions = {
        node_id: revision
        for node_id in set(node_ids)
        if (revision := _revision_of(node_id)) is not None
    }
    found = await _locate_rows(session, row_ids)
    # The proposals every check below needs, read at once (later gets hit the session).
    proposal_ids = {row.proposal_id for kind, row in found.values() if kind.of_proposal}
    proposal_ids |= {proposal_id for proposal_id, _ in revisions.values()}
    proposal_ids -= {row.id for _, row in found.values() if isinstance(row, Proposal)}
    if proposal_ids:
        await session.exec(select(Proposal).where(col(Proposal.id).in_(sorted(proposal_ids))))
    found.update(await _locate_revisions(session, revisions))
    return found


async def _visible(
    session: AsyncSession, viewer: Viewer, located: tuple[Kind, Any] | None
) -> NodeModel:
    if located is not None:
        kind, row = located
        try:
            await kind.check(session, viewer, row)
        except (Forbidden, NotFound):
            pass  # answered as an id no object has: node does not reveal what exists
        else:
            found: NodeModel = row
            return found
    raise NotFound("No object has this id.")


async def get_node(*, session: AsyncSession, viewer: Viewer, node_id: str) -> NodeModel:
    """The object with this id; ``NOT_FOUND`` for an id no object has, malformed ones too,
    and for an object the viewer may not see."""
    found = await _locate(session, [node_id])
    return await _visible(session, viewer, found.get(node_id))


async def get_nodes(
    *, session: AsyncSession, viewer: Viewer, node_ids: Sequence[str]
) -> list[NodeModel | SignoffError]:
    """Each id's object, or the refusal reading it alone would get, in the order asked."""
    if len(node_ids) > PAGE_SIZE_MAX:
        raise ValidationFailed(f"At most {PAGE_SIZE_MAX} ids at once.", field="ids")
    found = await _locate(session, node_ids)
    results: list[NodeModel | SignoffError] = []
    for node_id in node_ids:
        try:
            results.append(await _visible(session, viewer, found.get(node_id)))
        except SignoffError as refusal:
            results.append(refusal)
    return results
