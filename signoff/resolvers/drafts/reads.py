"""Reading drafts: one draft, a session's newest drafts, and a session's references.

A draft is read only by its own account (or an admin) and within its session; anyone else
is answered ``NOT_FOUND``, so a draft id reveals nothing (docs/design.md section 13,
Reading).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import (
    DRAFT_LIST_LIMIT,
    DRAFT_LIST_MAX_BYTES,
    DRAFT_REFERENCE_LIST_LIMIT,
)
from signoff.errors import Forbidden, NotFound, TooLarge, ValidationFailed
from signoff.models import Draft, DraftStatus, OwnerKind, Role
from signoff.resolvers.access.rules import Viewer

SESSION_ID_MAX_CHARS = 200


@dataclass(frozen=True)
class DraftReference:
    """A draft without its values: what a long session lists cheaply."""

    id: str
    status: DraftStatus
    owner_kind: OwnerKind
    owner: dict[str, Any]
    revision: int
    expires_at: datetime
    created_at: datetime
    updated_at: datetime


def may_read(viewer: Viewer, account_id: str) -> bool:
    """The account's own actor reads its drafts; admins read anyone's."""
    return viewer.id == account_id or viewer.role is Role.ADMIN


def check_session_id(session_id: str) -> str:
    if not 1 <= len(session_id) <= SESSION_ID_MAX_CHARS:
        raise ValidationFailed(
            f"sessionId must be 1 to {SESSION_ID_MAX_CHARS} characters.", field="sessionId"
        )
    return session_id


async def get_draft(
    *, session: AsyncSession, viewer: Viewer, draft_id: str, session_id: str
) -> Draft:
    """One draft of the viewer's (any draft, for an admin) in ``session_id``."""
    check_session_id(session_id)
    draft = await session.get(Draft, draft_id)
    if draft is None or draft.session_id != session_id or not may_read(viewer, draft.account_id):
        raise NotFound("No such draft in this session.", field="id")
    return draft


async def list_drafts(
    *, session: AsyncSession, viewer: Viewer, session_id: str, account_id: str | None = None
) -> list[Draft]:
    """The session's newest drafts with their values, oldest first."""
    account = _account(viewer, account_id)
    stmt = (
        select(Draft)
        .where(*_in_session(account, session_id))
        .order_by(col(Draft.created_at).desc(), col(Draft.id).desc())
        .limit(DRAFT_LIST_LIMIT)
    )
    drafts = list((await session.exec(stmt)).all())
    size = sum(len(json.dumps(d.values, separators=(",", ":")).encode()) for d in drafts)
    if size > DRAFT_LIST_MAX_BYTES:
        raise TooLarge(
            "These drafts' values are too large to list together: list draftReferences, "
            "then read drafts one at a time.",
            field="sessionId",
        )
    return drafts[::-1]


async def list_draft_references(
    *, session: AsyncSession, viewer: Viewer, session_id: str, account_id: str | None = None
) -> list[DraftReference]:
    """The session's newest drafts without their values, oldest first."""
    account = _account(viewer, account_id)
    stmt = (
        sa.select(
            col(Draft.id),
            col(Draft.status),
            col(Draft.owner_kind),
            col(Draft.owner),
            col(Draft.revision),
            col(Draft.expires_at),
            col(Draft.created_at),
            col(Draft.updated_at),
        )
        .where(*_in_session(account, session_id))
        .order_by(col(Draft.created_at).desc(), col(Draft.id).desc())
        .limit(DRAFT_REFERENCE_LIST_LIMIT)
    )
    # Only these columns: the values (up to 2 MiB a draft) are never read.
    connection = await session.connection()
    rows = (await connection.execute(stmt)).all()
    return [
        DraftReference(
            id=id_,
            status=DraftStatus(status),
            owner_kind=OwnerKind(owner_kind),
            owner=owner,
            revision=revision,
            expires_at=expires_at,
            created_at=created_at,
            updated_at=updated_at,
        )
        for id_, status, owner_kind, owner, revision, expires_at, created_at, updated_at in rows[
            ::-1
        ]
    ]


def _in_session(account_id: str, session_id: str) -> list[Any]:
    """One account's drafts of one session (the ``ix_drafts_session`` index)."""
    return [
        col(Draft.account_id) == account_id,
        col(Draft.session_id) == check_session_id(session_id),
    ]


def _account(viewer: Viewer, account_id: str | None) -> str:
    """Whose drafts a list reads: the viewer's own, or (admins) the one named."""
    if account_id is None or account_id == viewer.id:
        return viewer.id
    if viewer.role is not Role.ADMIN:
        raise Forbidden("Only admins read another account's drafts.", field="accountId")
    return account_id
