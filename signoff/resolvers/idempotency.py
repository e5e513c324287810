"""Idempotency keys: a replay returns the first result; other input under the key is refused."""

from __future__ import annotations

from typing import Any

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.digest import sha256_digest
from signoff.errors import IdempotencyKeyReused, ValidationFailed
from signoff.models import IdempotencyRecord
from signoff.resolvers.access import Viewer

KEY_MAX_CHARS = 200


def check_key(key: str | None) -> None:
    if key is not None and not 1 <= len(key) <= KEY_MAX_CHARS:
        raise ValidationFailed(
            f"idempotencyKey must be 1 to {KEY_MAX_CHARS} characters.", field="idempotencyKey"
        )


async def find_replay(
    session: AsyncSession, viewer: Viewer, operation: str, key: str | None, request: Any
) -> dict[str, Any] | None:
    """The first result stored under ``key``, or ``None`` when the key is new (or absent)."""
    if key is None:
        return None
    check_key(key)
    stored = (
        await session.exec(
            select(IdempotencyRecord).where(
                IdempotencyRecord.actor_id == viewer.id,
                IdempotencyRecord.operation == operation,
                IdempotencyRecord.key == key,
            )
        )
    ).first()
    if stored is None:
        return None
    if stored.request_digest != sha256_digest(request):
        raise IdempotencyKeyReused(
            "This idempotency key was already used with different input.", operation=operation
        )
    return stored.result


def remember(
    session: AsyncSession,
    viewer: Viewer,
    operation: str,
    key: str | None,
    request: Any,
    result: dict[str, Any],
) -> None:
    """Store ``result`` under ``key`` in the same transaction as the change."""
    if key is None:
        return
    session.add(
        IdempotencyRecord(
            actor_id=viewer.id,
            operation=operation,
            key=key,
            request_digest=sha256_digest(request),
            result=result,
        )
    )
