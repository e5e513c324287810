"""Targets: registering, retiring and reading delivery endpoints."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import (
    REQUIRED_APPROVALS_MAX,
    SIGNING_SECRET_PREFIX,
    TARGET_MAX_ATTEMPTS_DEFAULT,
    TARGET_TIMEOUT_DEFAULT_SECONDS,
)
from signoff.errors import AlreadyExists, NotFound, ValidationFailed
from signoff.jsonvalues import check_schema
from signoff.models import ApprovalMode, ChangeKind, Queue, Role, Target
from signoff.resolvers.access import Viewer, require_role
from signoff.resolvers.transitions import Happening, record
from signoff.resolvers.work import UnitOfWork
from signoff.validation import require_range, require_text

METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class RegisteredTarget:
    target: Target
    signing_secret: str


def new_signing_secret() -> str:
    """A Standard Webhooks secret: ``whsec_`` and 32 random bytes in base64."""
    return SIGNING_SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


async def register_target(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    name: str,
    url: str,
    input_schema: Any,
    approval_mode: ApprovalMode,
    queue_id: str | None = None,
    method: str | None = None,
    output_schema: Any = None,
    required_approvals: int | None = None,
    max_attempts: int | None = None,
    timeout_seconds: int | None = None,
) -> RegisteredTarget:
    """Register a target; its signing secret is returned here once and never again."""
    require_role(viewer, Role.OPERATOR)
    name = require_text(name, "name", 1, 200)
    method = (method or "POST").upper()
    if method not in METHODS:
        raise ValidationFailed(
            f"method must be one of {', '.join(sorted(METHODS))}.", field="method"
        )
    if approval_mode is ApprovalMode.HUMAN and queue_id is None:
        raise ValidationFailed(
            "A HUMAN target needs the queueId its approvals go to.", field="queueId"
        )
    if queue_id is not None and await work.session.get(Queue, queue_id) is None:
        raise NotFound("No such queue.", field="queueId")
    secret = new_signing_secret()
    target = Target(
        name=name,
        url=_check_url(url),
        method=method,
        input_schema=check_schema(input_schema, "inputSchema"),
        output_schema=None
        if output_schema is None
        else check_schema(output_schema, "outputSchema"),
        approval_mode=approval_mode,
        required_approvals=require_range(
            required_approvals, "requiredApprovals", 1, REQUIRED_APPROVALS_MAX, 1
        ),
        queue_id=queue_id,
        max_attempts=require_range(max_attempts, "maxAttempts", 1, 20, TARGET_MAX_ATTEMPTS_DEFAULT),
        timeout_seconds=require_range(
            timeout_seconds, "timeoutSeconds", 1, 120, TARGET_TIMEOUT_DEFAULT_SECONDS
        ),
        signing_secret=work.sealer.seal(secret),
        created_by_id=viewer.id,
    )
    work.session.add(target)
    try:
        await work.session.flush()
    except IntegrityError:
        await work.rollback()
        raise AlreadyExists(f"A target named {name!r} already exists.", field="name") from None
    record(
        work,
        Happening(
            entity_type="target",
            entity_id=target.id,
            actor_id=viewer.id,
            action="target.registered",
            kind=ChangeKind.TARGET_REGISTERED,
            details={"name": name, "url": target.url, "approval_mode": approval_mode.value},
            queue_id=target.queue_id,
            snapshot={"name": name, "approvalMode": approval_mode.value},
        ),
    )
    await work.commit()
    return RegisteredTarget(target=target, signing_secret=secret)


def _check_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in {"http", "https"} or not parts.netloc or len(url) > 2048:
        raise ValidationFailed("url must be an absolute http or https URL.", field="url")
    return url.strip()


async def retire_target(*, work: UnitOfWork, viewer: Viewer, target_id: str) -> Target:
    """Retire a target: it takes no new proposals; what was approved still delivers."""
    require_role(viewer, Role.OPERATOR)
    target = await get_target(session=work.session, viewer=viewer, target_id=target_id)
    if target.retired_at is None:
        target.retired_at = work.now()
        record(
            work,
            Happening(
                entity_type="target",
                entity_id=target.id,
                actor_id=viewer.id,
                action="target.retired",
                kind=ChangeKind.TARGET_RETIRED,
                queue_id=target.queue_id,
                snapshot={"name": target.name},
            ),
        )
        await work.commit()
    return target


async def get_target(*, session: AsyncSession, viewer: Viewer, target_id: str) -> Target:
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    target = await session.get(Target, target_id)
    if target is None:
        raise NotFound("No such target.")
    return target


async def list_targets(*, session: AsyncSession, viewer: Viewer) -> list[Target]:
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    return list((await session.exec(select(Target).order_by(col(Target.name)))).all())
