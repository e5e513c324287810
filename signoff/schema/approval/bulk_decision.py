"""Bulk decisions: the input, the per-item results, and the preview."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.resolvers.approval import bulk_decisions
from signoff.schema.approval.proposal import Approval, Proposal
from signoff.schema.delivery.target import Target
from signoff.schema.number import Number

if TYPE_CHECKING:
    from signoff.schema.approval.task import HumanTask

LazyTask = Annotated["HumanTask", strawberry.lazy("signoff.schema.approval.task")]


@strawberry.input(description="One proposal of a bulk decision, and the digest reviewed.")
class BulkDecisionItemInput:
    proposal_id: strawberry.ID
    payload_digest: str


@strawberry.input
class DecideProposalsInput:
    items: list[BulkDecisionItemInput] = strawberry.field(description="1 to 100 proposals.")
    decision: models.Decision
    idempotency_key: str = strawberry.field(
        description="Required (1-150): the same call sent again replays its results."
    )
    reason: str | None = None


@strawberry.type(description="One item's outcome: its decision, or why it was refused.")
class BulkDecisionResult:
    proposal_id: strawberry.ID
    proposal: Proposal | None = strawberry.field(description="Null when the item was refused.")
    approval: Approval | None
    task: LazyTask | None
    code: str | None = strawberry.field(description="The refusal's extensions.code, if refused.")
    message: str | None

    @classmethod
    def from_result(cls, item: bulk_decisions.ItemResult) -> BulkDecisionResult:
        from signoff.schema.approval.task import HumanTask

        decided = item.decided
        task = None if decided is None or decided.task is None else decided.task
        return cls(
            proposal_id=strawberry.ID(item.proposal_id),
            proposal=None if decided is None else Proposal.from_model(decided.proposal),
            approval=None if decided is None else Approval.from_model(decided.approval),
            task=None if task is None else HumanTask.from_model(task),
            code=item.code,
            message=item.message,
        )


@strawberry.type
class DecideProposalsPayload:
    bulk_id: strawberry.ID = strawberry.field(
        description="The bulk action; each item's audit record names it."
    )
    results: list[BulkDecisionResult] = strawberry.field(description="One per item, in order.")
    replayed: bool


@strawberry.type
class BulkPreviewItem:
    proposal_id: strawberry.ID
    proposal: Proposal | None
    code: str | None = strawberry.field(description="Why it would be refused; null: decided.")
    message: str | None


@strawberry.type
class BulkPreviewTarget:
    target: Target
    count: int = strawberry.field(description="Items of this target that would be decided.")
    summary_field: str | None
    summary_total: Number | None = strawberry.field(
        description="The sum of the target's summaryField over those items."
    )


@strawberry.type
class BulkPreviewState:
    state: models.ProposalState
    count: int


@strawberry.type(description="What decideProposals would do with these items now.")
class BulkDecisionPreview:
    items: list[BulkPreviewItem]
    by_target: list[BulkPreviewTarget]
    by_state: list[BulkPreviewState] = strawberry.field(
        description="Items by the proposal's current state (items not found are left out)."
    )
    decidable: int
    refused: int

    @classmethod
    def from_preview(cls, preview: bulk_decisions.BulkPreview) -> BulkDecisionPreview:
        return cls(
            items=[
                BulkPreviewItem(
                    proposal_id=strawberry.ID(item.proposal_id),
                    proposal=None if item.proposal is None else Proposal.from_model(item.proposal),
                    code=item.code,
                    message=item.message,
                )
                for item in preview.items
            ],
            by_target=[
                BulkPreviewTarget(
                    target=Target.from_model(summary.target),
                    count=summary.count,
                    summary_field=summary.target.summary_field,
                    summary_total=(
                        None if summary.summary_total is None else Number(summary.summary_total)
                    ),
                )
                for summary in preview.by_target
            ],
            by_state=[
                BulkPreviewState(state=models.ProposalState(state), count=count)
                for state, count in sorted(preview.by_state.items())
            ],
            decidable=preview.decidable,
            refused=len(preview.items) - preview.decidable,
        )


def items_of(items: list[BulkDecisionItemInput]) -> list[bulk_decisions.BulkItem]:
    return [bulk_decisions.BulkItem(str(item.proposal_id), item.payload_digest) for item in items]
