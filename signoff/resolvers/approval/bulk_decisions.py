"""Bulk decisions: one reviewer decides up to 100 proposals in one call, each still bound
to the digest it names (docs/design.md section 4.18).

Items are independent: each is the ordinary decision (``approvals.decide_named``) in a
transaction of its own, so one refusal undoes nothing else, and each is audited as its
own decision carrying the bulk action's id. The call is idempotent by its key: every item
is keyed ``<key>#<index>``, so a call cut short and sent again decides only what it had
not, and the whole answer is stored with the key once every item is through.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import (
    BULK_DECISION_KEY_MAX_CHARS,
    BULK_DECISION_MAX_ITEMS,
    REASON_MAX_CHARS,
    REASON_MIN_CHARS,
)
from signoff.errors import SignoffError, ValidationFailed
from signoff.models import Decision, Proposal, Role, Target
from signoff.models.base import new_id
from signoff.models.records import Record
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.approval.approvals import (
    DECIDED,
    DecideResult,
    check_decidable,
    decide_named,
    load_result,
    require_digest,
    require_undecided,
)
from signoff.resolvers.approval.proposals import get_proposal
from signoff.resolvers.core import idempotency
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.validation import optional_text, require_text


@dataclass(frozen=True)
class BulkItem:
    proposal_id: str
    payload_digest: str


@dataclass(frozen=True)
class ItemResult:
    """One item's outcome: its decision, or the code and message it was refused with."""

    proposal_id: str
    decided: DecideResult | None
    code: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class BulkResult:
    bulk_id: str
    items: list[ItemResult]
    replayed: bool


def check_items(items: list[BulkItem]) -> None:
    if not 1 <= len(items) <= BULK_DECISION_MAX_ITEMS:
        raise ValidationFailed(
            f"items must hold 1 to {BULK_DECISION_MAX_ITEMS} proposals.", field="items"
        )
    if len({item.proposal_id for item in items}) != len(items):
        raise ValidationFailed("items names a proposal more than once.", field="items")


async def decide_proposals(
    *,
    work: UnitOfWork,
    viewer: Viewer,
    items: list[BulkItem],
    decision: Decision,
    idempotency_key: str,
    reason: str | None = None,
) -> BulkResult:
    """Decide every item as ``decideProposal`` would, each on its own; one result per item."""
    require_role(viewer, Role.REVIEWER)
    check_items(items)
    key = require_text(idempotency_key, "idempotencyKey", 1, BULK_DECISION_KEY_MAX_CHARS)
    reason = optional_text(reason, "reason", REASON_MIN_CHARS, REASON_MAX_CHARS)
    request = {
        "items": [[item.proposal_id, item.payload_digest] for item in items],
        "decision": decision.value,
        "reason": reason,
    }
    call = idempotency.Keyed.of("decideProposals", key, request)

    async def run() -> BulkResult:
        bulk_id = new_id()
        results = [
            await _decide_item(
                work, viewer, key, bulk_id, index, len(items), item, decision, reason
            )
            for index, item in enumerate(items)
        ]
        decided = sum(result.decided is not None for result in results)
        # The bulk action itself, in the transaction that stores its answer.
        record(
            work,
            Happening(
                entity_type="bulk_decision",
                entity_id=bulk_id,
                actor_id=viewer.id,
                action="bulk_decision.made",
                details={
                    "decision": decision.value,
                    "reason": reason,
                    "items": len(items),
                    "decided": decided,
                    "refused": dict(Counter(r.code for r in results if r.code is not None)),
                },
            ),
        )
        return BulkResult(bulk_id=bulk_id, items=results, replayed=False)

    async def replay(work: UnitOfWork, stored: dict[str, Any]) -> BulkResult:
        results = [await _as_it_is_now(work.session, entry) for entry in stored["items"]]
        return BulkResult(bulk_id=stored["bulk_id"], items=results, replayed=True)

    kept = idempotency.Kept(result_of=_stored_result, replay=replay)
    result, _ = await idempotency.once(work, viewer, call, run, kept)
    return result


async def _as_it_is_now(session: AsyncSession, stored: dict[str, Any]) -> ItemResult:
    """A stored item's result, its proposal as it stands now."""
    decided = None
    if stored["approval_id"] is not None:
        decided = await load_result(session, stored["approval_id"], replayed=False)
    return ItemResult(stored["proposal_id"], decided, stored["code"], stored["message"])


async def _decide_item(
    work: UnitOfWork,
    viewer: Viewer,
    key: str,
    bulk_id: str,
    index: int,
    count: int,
    item: BulkItem,
    decision: Decision,
    reason: str | None,
) -> ItemResult:
    """One item in its own transaction, keyed within the call (committed when decided),
    answered as that commit left it: a worker may deliver it before the last item is
    through."""
    call = idempotency.Keyed.of(
        "decideProposals.item",
        f"{key}#{index}",
        {
            "proposal_id": item.proposal_id,
            "payload_digest": item.payload_digest,
            "decision": decision.value,
            "reason": reason,
        },
    )
    bulk = {"id": bulk_id, "index": index, "items": count}

    async def decide() -> DecideResult:
        return await decide_named(
            work, viewer, item.proposal_id, item.payload_digest, decision, reason, bulk=bulk
        )

    try:
        decided, _ = await idempotency.once(work, viewer, call, decide, DECIDED)
    except SignoffError as refused:  # ``once`` has rolled the item back
        return ItemResult(item.proposal_id, None, refused.code, refused.message)
    # Out of the session, so that a later item's rollback cannot expire what it answers
    # (a record, such as a replay's task, is in none).
    for row in (decided.proposal, decided.approval, decided.task):
        if row is not None and not isinstance(row, Record):
            work.session.expunge(row)
    return ItemResult(item.proposal_id, decided)


def _stored_result(result: BulkResult) -> dict[str, Any]:
    return {
        "bulk_id": result.bulk_id,
        "items": [
            {
                "proposal_id": item.proposal_id,
                "approval_id": None if item.decided is None else item.decided.approval.id,
                "code": item.code,
                "message": item.message,
            }
            for item in result.items
        ],
    }


@dataclass(frozen=True)
class PreviewItem:
    proposal_id: str
    proposal: Proposal | None
    code: str | None
    message: str | None


@dataclass(frozen=True)
class TargetSummary:
    """The items of one target that would be decided, and the sum of its summary field."""

    target: Target
    count: int
    summary_total: int | float | None


@dataclass(frozen=True)
class BulkPreview:
    items: list[PreviewItem]
    by_target: list[TargetSummary]
    by_state: dict[str, int]

    @property
    def decidable(self) -> int:
        return sum(item.code is None for item in self.items)


async def preview_bulk_decision(
    *, session: AsyncSession, viewer: Viewer, items: list[BulkItem]
) -> BulkPreview:
    """What ``decideProposals`` would do with these items now, without doing it: which
    would be refused and why, counts by target and by state, and each target's summary."""
    require_role(viewer, Role.REVIEWER)
    check_items(items)
    now = clock.now()
    previews: list[PreviewItem] = []
    by_state: Counter[str] = Counter()
    decidable: dict[str, list[Proposal]] = defaultdict(list)
    for item in items:
        proposal: Proposal | None = None
        try:
            proposal = await get_proposal(
                session=session, viewer=viewer, proposal_id=item.proposal_id
            )
            by_state[str(proposal.state)] += 1
            require_digest(proposal, item.payload_digest)
            await check_decidable(session, viewer, proposal, Decision.APPROVED, now)
            await require_undecided(session, proposal, viewer.id)
        except SignoffError as refused:
            previews.append(PreviewItem(item.proposal_id, proposal, refused.code, refused.message))
            continue
        previews.append(PreviewItem(item.proposal_id, proposal, None, None))
        decidable[proposal.target_id].append(proposal)
    targets = {
        target.id: target
        for target in (
            await session.exec(select(Target).where(col(Target.id).in_(list(decidable))))
        ).all()
    }
    summaries = [
        TargetSummary(
            target=targets[target_id],
            count=len(proposals),
            summary_total=summary_total_of(targets[target_id], proposals),
        )
        for target_id, proposals in decidable.items()
    ]
    return BulkPreview(items=previews, by_target=summaries, by_state=dict(by_state))


def summary_total_of(target: Target, proposals: list[Proposal]) -> int | float | None:
    """The sum of the target's summary field over the proposals (numbers only), added
    as decimals so that amounts like 0.1 and 0.2 give 0.3, and whole when the sum is."""
    if target.summary_field is None:
        return None
    values = [p.payload.get(target.summary_field) for p in proposals]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    total = sum((Decimal(repr(v)) for v in numbers), Decimal(0))
    return int(total) if total == total.to_integral_value() else float(total)
