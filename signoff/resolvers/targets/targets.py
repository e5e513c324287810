"""Targets: registering, retiring and reading delivery endpoints."""

from __future__ import annotations

import base64
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import (
    REASON_MAX_CHARS,
    REASON_MIN_CHARS,
    REQUIRED_APPROVALS_MAX,
    SIGNING_SECRET_PREFIX,
    SWEEP_BATCH_SIZE,
    TARGET_MAX_ATTEMPTS_DEFAULT,
    TARGET_MAX_CONCURRENCY_DEFAULT,
    TARGET_MAX_CONCURRENCY_MAX,
    TARGET_RATE_MAX_PER_SECOND,
    TARGET_RATE_MIN_PER_SECOND,
    TARGET_TIMEOUT_DEFAULT_SECONDS,
)
from signoff.destinations import DestinationPolicy
from signoff.errors import (
    AlreadyExists,
    NotFound,
    TargetAlreadyPaused,
    TargetNotPaused,
    ValidationFailed,
)
from signoff.jsonvalues import check_schema
from signoff.models import ApprovalMode, ChangeKind, DeadlineAction, Proposal, Queue, Role, Target
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.policies import check_policy
from signoff.resolvers.core import idempotency
from signoff.resolvers.core.target_lifecycle import (
    PAUSE,
    RESUME,
    RETIRE,
    TARGET_HOLD,
    TARGET_SERVICE,
)
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.delivery.due import due_rows
from signoff.resolvers.reach.deadlines import checked_policy
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
    input_schema: Any,
    url: str | None = None,
    approval_mode: ApprovalMode,
    queue_id: str | None = None,
    method: str | None = None,
    output_schema: Any = None,
    required_approvals: int | None = None,
    max_attempts: int | None = None,
    timeout_seconds: int | None = None,
    max_concurrency: int | None = None,
    rate_per_second: float | None = None,
    idempotency_key: str | None = None,
    amendable: bool = True,
    amendments_need_proposer: bool = False,
    amender_may_approve: bool = False,
    summary_field: str | None = None,
    approval_policy: Any = None,
    deadline_action: DeadlineAction | None = None,
    deadline_reason: str | None = None,
    escalation: Sequence[tuple[str, int]] | None = None,
) -> RegisteredTarget:
    """Register a target; its signing secret is returned here, and again only to a retry of
    the same call under the same idempotency key (which registers nothing)."""
    require_role(viewer, Role.OPERATOR)
    request: dict[str, Any] = {
        "name": name,
        "url": url,
        "input_schema": input_schema,
        "approval_mode": approval_mode,
        "queue_id": queue_id,
        "method": method,
        "output_schema": output_schema,
        "required_approvals": required_approvals,
        "max_attempts": max_attempts,
        "timeout_seconds": timeout_seconds,
        "max_concurrency": max_concurrency,
        "rate_per_second": rate_per_second,
        "amendable": amendable,
        "amendments_need_proposer": amendments_need_proposer,
        "summary_field": summary_field,
        "approval_policy": approval_policy,
        "deadline_action": deadline_action,
        "deadline_reason": deadline_reason,
        "escalation": None if escalation is None else [list(step) for step in escalation],
        # Only when set, so that a keyed call made before the setting existed replays.
        **({"amender_may_approve": True} if amender_may_approve else {}),
    }
    registered, _ = await idempotency.once(
        work,
        viewer,
        idempotency.Keyed.of("registerTarget", idempotency_key, request),
        lambda: _register_target(work, viewer, **request),
        # Never the secret: the target's sealed copy is opened again for a replay.
        idempotency.Kept.row("target_id", lambda registered: registered.target.id, _registered),
    )
    return registered


async def _registered(work: UnitOfWork, target_id: str) -> RegisteredTarget:
    target = await load(work, target_id)
    return RegisteredTarget(target=target, signing_secret=work.sealer.open(target.signing_secret))


async def _register_target(
    work: UnitOfWork,
    viewer: Viewer,
    *,
    name: str,
    input_schema: Any,
    url: str | None = None,
    approval_mode: ApprovalMode,
    queue_id: str | None,
    method: str | None,
    output_schema: Any,
    required_approvals: int | None,
    max_attempts: int | None,
    timeout_seconds: int | None,
    max_concurrency: int | None,
    rate_per_second: float | None,
    amendable: bool,
    amendments_need_proposer: bool,
    summary_field: str | None,
    approval_policy: Any,
    deadline_action: DeadlineAction | None,
    deadline_reason: str | None,
    escalation: Sequence[Sequence[Any]] | None,
    amender_may_approve: bool = False,
) -> RegisteredTarget:
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
    approvals = require_range(required_approvals, "requiredApprovals", 1, REQUIRED_APPROVALS_MAX, 1)
    policy = None
    if approval_policy is not None:
        policy = await check_policy(
            work.session,
            approval_policy,
            approval_mode=approval_mode,
            required_approvals=approvals,
            queue_id=queue_id,
        )
    deadline = await checked_policy(
        work,
        action=deadline_action,
        reason=deadline_reason,
        escalation=None if escalation is None else [(str(q), int(s)) for q, s in escalation],
        first_queue_id=queue_id,
    )
    secret = new_signing_secret()
    target = Target(
        name=name,
        url=None if url is None else check_url(url, work.services.destinations),
        method=method,
        input_schema=check_schema(input_schema, "inputSchema"),
        output_schema=None
        if output_schema is None
        else check_schema(output_schema, "outputSchema"),
        approval_mode=approval_mode,
        required_approvals=approvals,
        approval_policy=policy,
        queue_id=queue_id,
        max_attempts=require_range(max_attempts, "maxAttempts", 1, 20, TARGET_MAX_ATTEMPTS_DEFAULT),
        timeout_seconds=require_range(
            timeout_seconds, "timeoutSeconds", 1, 120, TARGET_TIMEOUT_DEFAULT_SECONDS
        ),
        max_concurrency=require_max_concurrency(max_concurrency),
        rate_per_second=None if rate_per_second is None else require_rate(rate_per_second),
        amendable=amendable,
        amendments_need_proposer=amendments_need_proposer,
        amender_may_approve=amender_may_approve,
        summary_field=None
        if summary_field is None
        else require_text(summary_field, "summaryField", 1, 200),
        signing_secret=work.sealer.seal(secret),
        created_by_id=viewer.id,
        deadline_action=deadline.action,
        deadline_reason=deadline.reason,
        escalation_chain=deadline.escalation_chain,
    )
    await work.add_unique(
        target, AlreadyExists(f"A target named {name!r} already exists.", field="name")
    )
    announce(
        work,
        viewer,
        target,
        "target.registered",
        ChangeKind.TARGET_REGISTERED,
        {"approvalMode": approval_mode.value},
        name=name,
        url=target.url,
        approval_mode=approval_mode.value,
        approval_policy=policy,
        deadline_policy=deadline.describe(),
    )
    return RegisteredTarget(target=target, signing_secret=secret)


def require_max_concurrency(value: int | None) -> int:
    """Deliveries of one target in flight at once (docs/design.md section 4.15)."""
    return require_range(
        value, "maxConcurrency", 1, TARGET_MAX_CONCURRENCY_MAX, TARGET_MAX_CONCURRENCY_DEFAULT
    )


def require_rate(value: float) -> float:
    """Deliveries of one target started per second (docs/design.md section 4.15)."""
    low, high = TARGET_RATE_MIN_PER_SECOND, TARGET_RATE_MAX_PER_SECOND
    if not low <= value <= high:  # also refuses NaN
        raise ValidationFailed(
            f"ratePerSecond must be between {low:g} and {high:g} deliveries per second; "
            "leave it out for no rate limit.",
            field="ratePerSecond",
        )
    return value


def check_url(url: str, destinations: DestinationPolicy) -> str:
    """An absolute http or https URL, as targets and notification channels need, that the
    destination policy does not refuse (``DESTINATION_REFUSED``)."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.netloc or len(url) > 2048:
        raise ValidationFailed("url must be an absolute http or https URL.", field="url")
    destinations.check_url(url)
    return url


async def retire_target(*, work: UnitOfWork, viewer: Viewer, target_id: str) -> Target:
    """Retire a target: it takes no new proposals; what was approved still delivers.

    Retiring a retired target changes nothing and answers it as it is: of two concurrent
    retires exactly one is audited and announced."""
    require_role(viewer, Role.OPERATOR)
    await get_target(session=work.session, viewer=viewer, target_id=target_id)
    retired = await TARGET_SERVICE.move(work, RETIRE, target_id, actor_id=viewer.id)
    if retired is None:
        return await TARGET_SERVICE.reread(work, target_id)
    await work.commit()
    return retired


@dataclass(frozen=True)
class TargetResult:
    target: Target
    replayed: bool


async def pause_target(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    target_id: str,
    reason: str,
    idempotency_key: str | None = None,
) -> TargetResult:
    """Hold a target's deliveries: its proposals stay QUEUED, no attempt starts, until
    ``resume_target``. Of two concurrent pauses one wins; the other is refused
    (``TARGET_ALREADY_PAUSED``) unless it repeats an idempotency key."""
    require_role(viewer, Role.OPERATOR)
    reason = require_text(reason, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    call = idempotency.Keyed.of(
        "pauseTarget", idempotency_key, {"target_id": target_id, "reason": reason}
    )

    async def pause() -> Target:
        await load(work, target_id)  # NOT_FOUND before anything is written
        paused = await TARGET_HOLD.move(
            work, PAUSE, target_id, actor_id=viewer.id, details={"reason": reason}
        )
        if paused is None:
            await TARGET_HOLD.refuse(work, target_id, _already_paused)
        return paused

    return await keyed_change(work, viewer, call, pause)


async def resume_target(
    *, work: UnitOfWork, viewer: Viewer, target_id: str, idempotency_key: str | None = None
) -> TargetResult:
    """Let a paused target's deliveries go: what waited is due at once and is enqueued after
    commit (up to a sweep batch; the sweep takes the rest). Of two concurrent resumes one
    wins; the other is refused (``TARGET_NOT_PAUSED``) unless it repeats a key."""
    require_role(viewer, Role.OPERATOR)
    call = idempotency.Keyed.of("resumeTarget", idempotency_key, {"target_id": target_id})

    async def resume() -> Target:
        paused_at = iso((await locked(work, target_id)).paused_at)
        scheduled = await schedule_due_deliveries(work, target_id)
        resumed = await TARGET_HOLD.move(
            work,
            RESUME,
            target_id,
            actor_id=viewer.id,
            details={"paused_at": paused_at, "scheduled": scheduled},
        )
        if resumed is None:
            await TARGET_HOLD.refuse(work, target_id, _not_paused)
        return resumed

    return await keyed_change(work, viewer, call, resume)


def _already_paused(current: Target) -> Exception:
    return TargetAlreadyPaused(
        f"Target {current.name!r} has been paused since {iso(current.paused_at)}; "
        "resumeTarget first to pause it with another reason.",
        pausedAt=iso(current.paused_at),
    )


def _not_paused(current: Target) -> Exception:
    return TargetNotPaused(
        f"Target {current.name!r} is not paused (another operator may have just resumed it)."
    )


async def keyed_change(
    work: UnitOfWork, viewer: Viewer, call: idempotency.Keyed, run: Callable[[], Awaitable[Target]]
) -> TargetResult:
    """Run a keyed change to one target, or replay it: the target as it is now."""
    kept = idempotency.Kept.row("target_id", lambda target: target.id, load)
    target, replayed = await idempotency.once(work, viewer, call, run, kept)
    return TargetResult(target=target, replayed=replayed)


async def schedule_due_deliveries(work: UnitOfWork, target_id: str) -> int:
    """Enqueue, after commit, the target's proposals that are due now (up to a sweep batch;
    the sweep takes any more), for a resume: they are counted before its move, while the
    target is still paused, so the resume's audit record can say how many."""
    waiting = (
        await work.session.exec(
            select(Proposal.id, Proposal.delivery_attempt_count)
            .where(col(Proposal.target_id) == target_id, due_rows(work.now()))
            .order_by(col(Proposal.next_attempt_at))
            .limit(SWEEP_BATCH_SIZE)
        )
    ).all()
    for proposal_id, attempts in waiting:
        work.schedule_delivery(proposal_id, attempts + 1)
    return len(waiting)


async def locked(work: UnitOfWork, target_id: str) -> Target:
    """The target as stored now, locked until commit on PostgreSQL (SQLite's write lock is
    taken by the first write), so that what the audit calls its state before stays true
    (``NOT_FOUND`` if there is none)."""
    stmt = (
        select(Target)
        .where(col(Target.id) == target_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    target = (await work.session.exec(stmt)).first()
    if target is None:
        raise NotFound("No such target.")
    return target


def announce(
    work: UnitOfWork,
    viewer: Viewer,
    target: Target,
    action: str,
    kind: ChangeKind,
    snapshot: dict[str, Any] | None = None,
    **details: Any,
) -> None:
    """A change to a target that is not a move of its lifecycles (registering it, its
    limits), audited and in the feed."""
    record(
        work,
        Happening(
            entity_type="target",
            entity_id=target.id,
            actor_id=viewer.id,
            action=action,
            kind=kind,
            details=details,
            queue_id=target.queue_id,
            snapshot={"name": target.name, "pausedAt": iso(target.paused_at), **(snapshot or {})},
        ),
    )


async def load(work: UnitOfWork, target_id: str) -> Target:
    """The target as stored now (``NOT_FOUND`` if there is none)."""
    target = await work.session.get(Target, target_id, populate_existing=True)
    if target is None:
        raise NotFound("No such target.")
    return target


def iso(at: datetime | None) -> str | None:
    """A time as audit details and snapshots carry it."""
    return None if at is None else at.isoformat()


async def get_target(*, session: AsyncSession, viewer: Viewer, target_id: str) -> Target:
    """A target the viewer may read; one it may not is answered as one that does not
    exist (``NOT_FOUND``), so ids tell nothing."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    target = await session.get(Target, target_id)
    if target is None or not viewer.sees_target(target):
        raise NotFound("No such target.")
    return target


async def list_targets(*, session: AsyncSession, viewer: Viewer) -> list[Target]:
    """The targets the viewer may read, by name."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    stmt = select(Target).order_by(col(Target.name))
    if viewer.role is Role.AGENT:
        stmt = stmt.where(col(Target.retired_at).is_(None))
    return [target for target in (await session.exec(stmt)).all() if viewer.sees_target(target)]
