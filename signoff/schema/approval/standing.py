"""``ViewerStanding``: where the viewer stands on a proposal (``Proposal.viewerStanding``)."""

from __future__ import annotations

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.errors import SignoffError
from signoff.resolvers.approval.standing import Standing


@strawberry.type(description="A decision the viewer may not make now, and why.")
class StandingRefusal:
    code: str = strawberry.field(description="The extensions.code the decision would meet.")
    message: str


@strawberry.type(
    description="The viewer's decision on the proposal's current revision (as any of "
    "their linked actors) and the decisions open to them now."
)
class ViewerStanding:
    decision: models.Decision | None = strawberry.field(
        description="What they decided of the current revision; null: nothing yet."
    )
    decided_as: str | None = strawberry.field(description="The actor they decided it as.")
    may_approve: bool
    may_reject: bool
    approve_refusal: StandingRefusal | None = strawberry.field(
        description="Why an approval would be refused now; null when it may be made."
    )
    reject_refusal: StandingRefusal | None = strawberry.field(
        description="Why a rejection would be refused now; null when it may be made."
    )

    @classmethod
    def of(cls, standing: Standing) -> ViewerStanding:
        return cls(
            decision=standing.decision,
            decided_as=standing.decided_as,
            may_approve=standing.may_approve,
            may_reject=standing.may_reject,
            approve_refusal=_refusal(standing.approve_refusal),
            reject_refusal=_refusal(standing.reject_refusal),
        )


def _refusal(error: SignoffError | None) -> StandingRefusal | None:
    return None if error is None else StandingRefusal(code=error.code, message=error.message)
