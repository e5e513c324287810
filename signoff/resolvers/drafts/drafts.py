"""Drafts: an agent prepares, the person edits and reserves, the executor dispatches once.

Every decision about an owner (what a draft would create) locks its ``draft_owners`` row
first, so decisions are made one at a time; whether its current draft is blocked, live or
stale decides what a new draft may do. Every change goes through the draft's transition
table (docs/design.md sections 7 and 13).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import col, func, select

from signoff.constants import (
    DRAFT_FILES_MAX_BYTES,
    DRAFT_TTL_SECONDS,
    DRAFT_VALUES_MAX_BYTES,
    DRAFTS_PER_SESSION,
)
from signoff.digest import canonical_json, sha256_digest
from signoff.errors import (
    AccountMismatch,
    DispatchConsumed,
    DraftExpired,
    Forbidden,
    ImmutableRequest,
    NotDispatchable,
    NotEditable,
    NotFound,
    ReceiptConflict,
    RecordUnreadable,
    ReferenceReadOnly,
    RequestConflict,
    ReservationMismatch,
    ReviewRequired,
    StaleRevision,
    TargetChanged,
    TargetInUse,
    TooLarge,
    TooManyDrafts,
    ValidationFailed,
    ValuesChanged,
)
from signoff.jsonvalues import check_tree
from signoff.models import (
    Actor,
    CancelReason,
    ChangeKind,
    Draft,
    DraftOutcome,
    DraftOwner,
    DraftSource,
    DraftStatus,
    OwnerKind,
    Role,
)
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core import idempotency, lifecycles
from signoff.resolvers.core.lifecycles import DRAFT
from signoff.resolvers.core.rows import require_row
from signoff.resolvers.core.transitions import Edge
from signoff.resolvers.core.work import UnitOfWork
from signoff.validation import require_text

# What identifies each kind of owner; its other fields (a schema version, a label) may
# change without it being another owner.
IDENTITY = {
    OwnerKind.FORM: ("form", "step", "accountId"),
    OwnerKind.APPROVAL: ("family", "requestId", "accountId"),
}
OUTCOME_STATUS = {
    DraftOutcome.SUBMITTED: DraftStatus.OBSERVED,
    DraftOutcome.PARTIAL: DraftStatus.PARTIAL,
    DraftOutcome.UNKNOWN: DraftStatus.OUTCOME_UNKNOWN,
}
REPORTED = (DraftStatus.OBSERVED, DraftStatus.PARTIAL, DraftStatus.OUTCOME_UNKNOWN)


@dataclass(frozen=True)
class DraftResult:
    draft: Draft
    replayed: bool


@dataclass(frozen=True)
class DispatchCheck:
    allowed: bool
    managed: bool


# --- owners ------------------------------------------------------------------------


def checked_owner(owner: Any, account_id: str) -> dict[str, Any]:
    if not isinstance(owner, dict) or owner.get("kind") not in OwnerKind.__members__:
        raise ValidationFailed(
            "owner must be an object whose kind is FORM, APPROVAL or REFERENCE.", field="owner"
        )
    kind = OwnerKind(owner["kind"])
    for name in IDENTITY.get(kind, ()):
        if not isinstance(owner.get(name), str) or not owner[name]:
            raise ValidationFailed(f"A {kind} owner needs {name}.", field="owner")
    if kind in IDENTITY and owner["accountId"] != account_id:
        raise AccountMismatch("The owner names another account than the draft's.")
    return owner


def owner_identity(owner: dict[str, Any], session_id: str) -> str:
    """The owner key: a FORM or APPROVAL owner is one across sessions; a REFERENCE is
    only ever a pointer within its session."""
    kind = OwnerKind(owner["kind"])
    if kind in IDENTITY:
        return sha256_digest({"kind": kind.value, **{n: owner[n] for n in IDENTITY[kind]}})
    return sha256_digest({"owner": owner, "sessionId": session_id})


def owner_state(draft: Draft, now: datetime) -> str:
    """``blocked``, ``live`` or ``stale``: see the module's docstring."""
    if draft.status in REPORTED:
        return "blocked"
    if draft.dispatched_at is not None and draft.cancel_reason != CancelReason.NOT_SUBMITTED:
        return "blocked"
    if draft.expires_at > now and draft.status in (DraftStatus.DRAFT, DraftStatus.RESERVED):
        return "live"
    return "stale"


async def lock_owner(work: UnitOfWork, owner_key: str) -> DraftOwner:
    """The owner's row, created if new and locked for the rest of the transaction."""
    session = work.session
    bind: Any = session.get_bind()
    insert = postgresql.insert if bind.dialect.name == "postgresql" else sqlite.insert
    await session.exec(
        insert(DraftOwner)
        .values(owner_key=owner_key, updated_at=work.now())
        .on_conflict_do_nothing(index_elements=["owner_key"])
    )
    stmt = (
        select(DraftOwner)
        .where(DraftOwner.owner_key == owner_key)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return (await session.exec(stmt)).one()


async def _holding(work: UnitOfWork, holder: DraftOwner) -> Draft | None:
    """The draft that holds the owner, if any is left (retention may have deleted it)."""
    if holder.draft_id is None:
        return None
    draft = await work.session.get(Draft, holder.draft_id, populate_existing=True)
    return None if draft is None else readable(draft)


def readable(draft: Draft) -> Draft:
    """The draft, if this version understands it: one stored by a newer version (another
    owner kind or status) is refused as a conflict, never answered with an error 500."""
    if (
        draft.owner_kind not in OwnerKind.__members__
        or draft.status not in DraftStatus.__members__
        or not isinstance(draft.owner, dict)
        or not isinstance(draft.updated_by_user, list)
    ):
        raise RecordUnreadable()
    return draft


async def _supersede(work: UnitOfWork, draft: Draft, actor_id: str | None) -> None:
    """End a draft that can no longer dispatch (unless its dispatch already passed)."""
    await DRAFT.move(
        work,
        lifecycles.SUPERSEDE_DRAFT,
        draft.id,
        actor_id=actor_id,
        guard=col(Draft.dispatched_at).is_(None),
        values={"cancel_reason": CancelReason.SUPERSEDED.value, "revision": Draft.revision + 1},
    )


# --- values ------------------------------------------------------------------------


def checked_values(owner: dict[str, Any], values: Any) -> dict[str, Any]:
    kind = OwnerKind(owner["kind"])
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise ValidationFailed("values must be an object.", field="values")
    check_tree(values, "values", large_numbers=False)
    if kind is OwnerKind.REFERENCE and values:
        raise ValidationFailed("A REFERENCE draft carries no values.", field="values")
    if kind is OwnerKind.APPROVAL and (
        set(values) != {"request"} or not isinstance(values["request"], dict)
    ):
        raise ValidationFailed(
            "An APPROVAL draft's values are exactly one request object.", field="values"
        )
    return values


def check_size(owner: dict[str, Any], values: dict[str, Any], edited: list[str]) -> None:
    limit = DRAFT_VALUES_MAX_BYTES
    if owner["kind"] == OwnerKind.APPROVAL and owner.get("carriesFiles") is True:
        limit = DRAFT_FILES_MAX_BYTES
    size = len(canonical_json(values).encode()) + len(canonical_json(edited).encode())
    if size > limit:
        raise TooLarge(f"The values and edited fields take {size} bytes; at most {limit}.")


def values_digest(values: dict[str, Any]) -> str:
    return sha256_digest(values)


# --- prepare -----------------------------------------------------------------------


async def prepare_draft(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    request_id: str,
    session_id: str,
    account_id: str,
    owner: Any,
    values: Any = None,
) -> DraftResult:
    """An agent prepares a draft for a person; the same request id replays."""
    require_role(viewer, Role.AGENT)
    session_id = require_text(session_id, "sessionId", 1, 200)
    owner = checked_owner(owner, account_id)
    values = checked_values(owner, values)
    check_size(owner, values, [])
    call = _keyed(
        "draftPrepare",
        request_id,
        {"sessionId": session_id, "accountId": account_id, "owner": owner, "values": values},
    )

    async def prepare() -> DraftResult:
        await require_row(work.session, Actor, account_id, "No such account.", field="accountId")
        key = owner_identity(owner, session_id)
        holder = await lock_owner(work, key)
        if holder.manual_submitted_at is not None and owner["kind"] != OwnerKind.REFERENCE:
            raise DispatchConsumed(
                "This was submitted from the ordinary form; check the system it went to "
                "before preparing another."
            )
        current = await _holding(work, holder)
        if current is not None:
            kept = await _keep_or_supersede(work, viewer, current, session_id, owner, values)
            if kept is not None:
                return DraftResult(kept, replayed=True)
        await _within_session_cap(work, account_id, session_id)
        draft = await _create(work, viewer, key, session_id, account_id, owner, values)
        holder.draft_id, holder.updated_at = draft.id, work.now()
        return DraftResult(draft, replayed=False)

    done, _ = await idempotency.once(work, viewer, call, prepare, _KEPT)
    return done


async def _keep_or_supersede(
    work: UnitOfWork,
    viewer: Viewer,
    current: Draft,
    session_id: str,
    owner: dict[str, Any],
    values: dict[str, Any],
) -> Draft | None:
    """The owner's current draft if it stands (the prepare answers with it), else ``None``
    once it is superseded; refusals where neither may happen."""
    same_owner = canonical_json(current.owner) == canonical_json(owner)
    same_session = current.session_id == session_id
    if (
        owner["kind"] == OwnerKind.APPROVAL
        and same_owner
        and current.values is not None
        and canonical_json(current.values) != canonical_json(values)
    ):
        raise RequestConflict("This approval request already binds different values.")
    state = owner_state(current, work.now())
    in_flight = state == "live" and current.status == DraftStatus.RESERVED
    if state == "blocked" or in_flight or (state == "live" and not same_session):
        if same_owner and same_session:
            return current
        if state == "blocked":
            raise DispatchConsumed(
                "This already has a submitted draft; check the system it went to before "
                "preparing another."
            )
        if not same_session:
            raise TargetInUse("This already has an open draft in another session.")
        raise TargetChanged("The form changed while its draft was being submitted; reopen it.")
    if state == "live" and same_owner:
        return current
    await _supersede(work, current, viewer.id)
    return None


async def _within_session_cap(work: UnitOfWork, account_id: str, session_id: str) -> None:
    since = work.now() - timedelta(seconds=DRAFT_TTL_SECONDS)
    stmt = select(func.count()).where(
        Draft.account_id == account_id,
        Draft.session_id == session_id,
        col(Draft.created_at) > since,
    )
    if (await work.session.exec(stmt)).one() >= DRAFTS_PER_SESSION:
        raise TooManyDrafts(
            f"This session made {DRAFTS_PER_SESSION} drafts in the last week; start a new one."
        )


async def _create(
    work: UnitOfWork,
    viewer: Viewer,
    owner_key: str,
    session_id: str,
    account_id: str,
    owner: dict[str, Any],
    values: dict[str, Any],
) -> Draft:
    now = work.now()
    draft = Draft(
        account_id=account_id,
        session_id=session_id,
        prepared_by_id=viewer.id,
        owner=owner,
        owner_kind=OwnerKind(owner["kind"]),
        owner_key=owner_key,
        values=values,
        values_digest=values_digest(values),
        updated_by_user=[],
        expires_at=now + timedelta(seconds=DRAFT_TTL_SECONDS),
        created_at=now,
        updated_at=now,
    )
    return await DRAFT.created(
        work,
        draft,
        kind=ChangeKind.DRAFT_PREPARED,
        action="draft.prepared",
        actor_id=viewer.id,
        details={"ownerKind": owner["kind"], "sessionId": session_id},
    )


# --- the person's and the agent's changes -------------------------------------------


async def update_draft(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    request_id: str,
    draft_id: str,
    session_id: str,
    expected_revision: int,
    source: DraftSource,
    patch: Any = None,
    remove: list[str] | None = None,
) -> DraftResult:
    """Edit a draft. An agent's patch never overwrites a field the person edited."""
    patch = {} if patch is None else patch
    if not isinstance(patch, dict):
        raise ValidationFailed("patch must be an object.", field="patch")
    removed = list(remove or [])
    call = _keyed(
        "draftUpdate",
        request_id,
        {
            "draftId": draft_id,
            "sessionId": session_id,
            "expectedRevision": expected_revision,
            "source": source.value,
            "patch": patch,
            "remove": removed,
        },
    )

    async def update() -> DraftResult:
        draft = await _editable(work, viewer, draft_id, session_id, expected_revision, source)
        if draft.status != DraftStatus.DRAFT:
            raise NotEditable()
        if draft.owner_kind == OwnerKind.APPROVAL:
            raise ImmutableRequest()
        edited = set(draft.updated_by_user)
        if source is DraftSource.AGENT:  # the person's edits stand
            patch_ = {k: v for k, v in patch.items() if k not in edited}
            removed_ = [name for name in removed if name not in edited]
        else:
            patch_, removed_ = patch, removed
            edited |= set(patch) | set(removed)
        merged = {**(draft.values or {}), **patch_}
        for name in removed_:
            merged.pop(name, None)
        user_fields = sorted(edited)
        check_size(draft.owner, merged, user_fields)
        return await _move(
            work,
            viewer,
            draft,
            lifecycles.EDIT_DRAFT,
            values={
                "values": merged,
                "values_digest": values_digest(merged),
                "updated_by_user": user_fields,
            },
            details={"source": source.value, "fields": sorted(set(patch_) | set(removed_))},
        )

    done, _ = await idempotency.once(work, viewer, call, update, _KEPT)
    return done


async def cancel_draft(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    request_id: str,
    draft_id: str,
    session_id: str,
    expected_revision: int,
) -> DraftResult:
    """The person ends a draft, or a reservation that never reached the executor."""
    call = _keyed(
        "draftCancel",
        request_id,
        {"draftId": draft_id, "sessionId": session_id, "expectedRevision": expected_revision},
    )

    async def cancel() -> DraftResult:
        draft = await _editable(
            work, viewer, draft_id, session_id, expected_revision, DraftSource.USER
        )
        unsent = draft.status == DraftStatus.RESERVED and draft.dispatched_at is None
        if draft.status != DraftStatus.DRAFT and not unsent:
            raise NotEditable("A dispatched or finished draft cannot be cancelled.")
        return await _move(
            work,
            viewer,
            draft,
            lifecycles.CANCEL_DRAFT,
            guard=col(Draft.dispatched_at).is_(None),
            values={"cancel_reason": CancelReason.USER.value},
        )

    done, _ = await idempotency.once(work, viewer, call, cancel, _KEPT)
    return done


async def reserve_draft(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    request_id: str,
    draft_id: str,
    session_id: str,
    expected_revision: int,
    values_digest_: str,
) -> DraftResult:
    """The person fixes the values they reviewed; the draft gets its one operation key."""
    call = _keyed(
        "draftReserve",
        request_id,
        {
            "draftId": draft_id,
            "sessionId": session_id,
            "expectedRevision": expected_revision,
            "valuesDigest": values_digest_,
        },
    )

    async def reserve() -> DraftResult:
        draft = await _editable(
            work, viewer, draft_id, session_id, expected_revision, DraftSource.USER
        )
        if draft.status != DraftStatus.DRAFT:
            raise NotEditable("Only a draft being edited can be reserved.")
        if draft.values_digest != values_digest_:
            raise ValuesChanged(expected=draft.values_digest)
        return await _move(
            work,
            viewer,
            draft,
            lifecycles.RESERVE_DRAFT,
            guard=Draft.values_digest == values_digest_,
            values={
                "operation_key": uuid.uuid4().hex,
                "reserved_digest": values_digest_,
                "reserved_at": work.now(),
            },
        )

    done, _ = await idempotency.once(work, viewer, call, reserve, _KEPT)
    return done


async def _editable(
    work: UnitOfWork,
    viewer: Viewer,
    draft_id: str,
    session_id: str,
    expected_revision: int,
    source: DraftSource,
) -> Draft:
    """The draft, if this viewer may change it as ``source`` now."""
    draft = await _in_session(work, draft_id, session_id)
    if source is DraftSource.USER and draft.account_id != viewer.id:
        raise AccountMismatch("This draft belongs to another account.")
    if source is DraftSource.AGENT and (
        viewer.role is not Role.AGENT or draft.prepared_by_id != viewer.id
    ):
        raise Forbidden("Only the agent that prepared a draft edits it as AGENT.")
    if draft.owner_kind == OwnerKind.REFERENCE:
        raise ReferenceReadOnly()
    if draft.expires_at <= work.now():
        raise DraftExpired()
    if draft.revision != expected_revision:
        raise StaleRevision(revision=draft.revision)
    return draft


async def _in_session(work: UnitOfWork, draft_id: str, session_id: str) -> Draft:
    draft = await work.session.get(Draft, draft_id, populate_existing=True)
    if draft is None or draft.session_id != session_id:
        raise NotFound("No such draft in this session.")
    return readable(draft)


async def _move(
    work: UnitOfWork,
    viewer: Viewer,
    draft: Draft,
    edge: Edge[DraftStatus],
    *,
    guard: Any = None,
    values: dict[str, Any],
    details: dict[str, Any] | None = None,
) -> DraftResult:
    """A compare-and-set on the revision the caller read; the revision counts up."""
    revision = Draft.revision == draft.revision
    moved = await DRAFT.move(
        work,
        edge,
        draft.id,
        actor_id=viewer.id,
        guard=revision if guard is None else revision & guard,
        values={**values, "revision": Draft.revision + 1},
        details=details,
    )
    if moved is None:
        await DRAFT.refuse(
            work,
            draft.id,
            lambda _: StaleRevision("The draft changed just now; reload it and try again."),
        )
    return DraftResult(moved, replayed=False)


# --- the executor ------------------------------------------------------------------


async def check_draft_dispatch(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    owner: Any,
    draft_id: str | None = None,
    operation_key: str | None = None,
    values_digest_: str | None = None,
) -> DispatchCheck:
    """Asked once by the executor before it sends. With a draft, its reservation passes
    exactly once; without, it is the ordinary form's check for the same owner."""
    require_role(viewer, Role.INTEGRATION)
    if not isinstance(owner, dict) or not isinstance(owner.get("accountId"), str):
        raise ValidationFailed("owner must name its accountId.", field="owner")
    owner = checked_owner(owner, owner["accountId"])
    if draft_id is None:
        return await _ordinary_form(work, viewer, owner)
    draft = await work.session.get(Draft, draft_id)
    if draft is None:
        raise ReviewRequired("No matching reviewed draft exists for this owner.")
    readable(draft)
    holder = await lock_owner(work, draft.owner_key)
    if holder.manual_submitted_at is not None and holder.manual_submitted_at >= draft.created_at:
        raise DispatchConsumed(
            "This was submitted from the ordinary form; check the system it went to first."
        )
    _require_dispatchable(draft, owner, operation_key, values_digest_, work.now())
    dispatched = await DRAFT.move(
        work,
        lifecycles.DISPATCH_DRAFT,
        draft.id,
        actor_id=viewer.id,
        guard=(col(Draft.dispatched_at).is_(None))
        & (Draft.operation_key == operation_key)
        & (Draft.reserved_digest == values_digest_)
        & (col(Draft.expires_at) > work.now()),
        values={"dispatched_at": work.now()},
    )
    if dispatched is None:
        await DRAFT.refuse(
            work, draft.id, lambda _: DispatchConsumed("This reservation was dispatched already.")
        )
    await work.commit()
    return DispatchCheck(allowed=True, managed=True)


def _require_dispatchable(
    draft: Draft,
    owner: dict[str, Any],
    operation_key: str | None,
    digest: str | None,
    now: datetime,
) -> None:
    if canonical_json(draft.owner) != canonical_json(owner):
        raise NotDispatchable("The owner is not the draft's.")
    if draft.dispatched_at is not None:
        raise DispatchConsumed("This reservation was dispatched already.")
    if draft.status != DraftStatus.RESERVED or draft.expires_at <= now:
        raise NotDispatchable(f"The draft is {draft.status}, not reserved.", status=draft.status)
    if not operation_key or draft.operation_key != operation_key:
        raise ReservationMismatch()
    if draft.reserved_digest != digest:
        raise ValuesChanged("The values are not the reserved ones.")


async def _ordinary_form(work: UnitOfWork, viewer: Viewer, owner: dict[str, Any]) -> DispatchCheck:
    """The ordinary form only waits for a draft whose operation may have reached the
    executor; any other draft for the owner is superseded, and the marker stops a draft
    prepared later from submitting the same thing."""
    if owner["kind"] != OwnerKind.FORM:
        raise ReviewRequired("An approval dispatches only through its reviewed draft.")
    holder = await lock_owner(work, owner_identity(owner, ""))
    current = await _holding(work, holder)
    if current is not None:
        if owner_state(current, work.now()) == "blocked":
            raise DispatchConsumed(
                "A draft of this already reached the system it goes to; check it before "
                "submitting again."
            )
        await _supersede(work, current, viewer.id)
    holder.manual_submitted_at = holder.updated_at = work.now()
    await work.commit()
    return DispatchCheck(allowed=True, managed=False)


async def observe_draft(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    request_id: str,
    draft_id: str,
    session_id: str,
    expected_revision: int,
    operation_key: str,
    outcome: DraftOutcome,
    receipt: Any = None,
    owner_execution_ref: str | None = None,
) -> DraftResult:
    """The executor reports what became of a reservation; receipts only grow."""
    require_role(viewer, Role.INTEGRATION)
    call = _keyed(
        "draftObserve",
        request_id,
        {
            "draftId": draft_id,
            "sessionId": session_id,
            "expectedRevision": expected_revision,
            "operationKey": operation_key,
            "outcome": outcome.value,
            "receipt": receipt,
            "ownerExecutionRef": owner_execution_ref,
        },
    )

    async def observe() -> DraftResult:
        draft = await _in_session(work, draft_id, session_id)
        if draft.revision != expected_revision:
            raise StaleRevision(revision=draft.revision)
        _require_reservation(draft, operation_key, outcome)
        _require_receipt(draft.receipt, receipt)
        if outcome is DraftOutcome.NOT_SUBMITTED:
            return await _move(
                work,
                viewer,
                draft,
                lifecycles.RELEASE_DRAFT,
                values={"cancel_reason": CancelReason.NOT_SUBMITTED.value},
            )
        return await _move(
            work,
            viewer,
            draft,
            lifecycles.OBSERVE_DRAFT,
            values={
                "status": OUTCOME_STATUS[outcome].value,
                "observed_at": work.now(),
                "receipt": draft.receipt if receipt is None else receipt,
                "owner_execution_ref": owner_execution_ref or draft.owner_execution_ref,
            },
            details={"outcome": outcome.value},
        )

    done, _ = await idempotency.once(work, viewer, call, observe, _KEPT)
    return done


def _require_reservation(draft: Draft, operation_key: str, outcome: DraftOutcome) -> None:
    allowed = (
        (DraftStatus.RESERVED,)
        if outcome is DraftOutcome.NOT_SUBMITTED
        else (DraftStatus.RESERVED, DraftStatus.OUTCOME_UNKNOWN, DraftStatus.PARTIAL)
    )
    if draft.operation_key != operation_key or draft.status not in allowed:
        raise ReservationMismatch()


def _require_receipt(previous: Any, receipt: Any) -> None:
    if receipt is None:
        return
    if len(canonical_json(receipt).encode()) > DRAFT_VALUES_MAX_BYTES:
        raise TooLarge(f"A receipt takes at most {DRAFT_VALUES_MAX_BYTES} bytes.")
    if previous is not None and not extends(previous, receipt):
        raise ReceiptConflict()


def extends(previous: Any, receipt: Any) -> bool:
    """Whether ``receipt`` keeps every fact of ``previous`` (it may add more): objects keep
    their keys, lists keep their items in place, anything else stays equal."""
    if isinstance(previous, dict):
        return isinstance(receipt, dict) and all(
            key in receipt and extends(value, receipt[key]) for key, value in previous.items()
        )
    if isinstance(previous, list):
        return (
            isinstance(receipt, list)
            and len(receipt) >= len(previous)
            and all(extends(a, b) for a, b in zip(previous, receipt, strict=False))
        )
    return bool(previous == receipt and type(previous) is type(receipt))


# --- shared ------------------------------------------------------------------------


def _keyed(operation: str, request_id: str, request: dict[str, Any]) -> idempotency.Keyed:
    return idempotency.Keyed(
        operation,
        require_text(request_id, "requestId", 1, 200),
        sha256_digest(request),
        field="requestId",
        conflict=RequestConflict,
    )


async def _replayed(work: UnitOfWork, draft_id: str) -> DraftResult:
    draft = await require_row(
        work.session,
        Draft,
        draft_id,
        "The draft this request made is gone (retention).",
        refresh=True,
    )
    return DraftResult(draft, replayed=True)


# A draft request answers with the draft as it is now.
_KEPT = idempotency.Kept.row("draft_id", lambda done: done.draft.id, _replayed)
