"""The ``Proposal`` and ``Approval`` types and the proposal inputs and payloads."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.models.base import by_value
from signoff.models.proposal import result_document
from signoff.models.records import Along, Via
from signoff.resolvers.approval import receipts, standing, timeline
from signoff.resolvers.core.nodes import revision_node_id
from signoff.resolvers.core.pagination import Page
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.approval.queue import Queue
from signoff.schema.approval.standing import ViewerStanding
from signoff.schema.approval.timeline import TimelineEntry
from signoff.schema.call import call
from signoff.schema.context import context_of
from signoff.schema.delivery.delivery import DeliveryAttempt
from signoff.schema.delivery.target import Target
from signoff.schema.loaders import (
    LoadedRelation,
    Loaders,
    Reached,
    RowLoader,
    loaded_field,
    prime_read,
    warm,
)
from signoff.schema.lookahead import Selected
from signoff.schema.node import Node
from signoff.schema.reach.deadline import DeadlineOverrideInput, DeadlinePolicy

if TYPE_CHECKING:
    from signoff.events.relations import ProposalRelations
    from signoff.schema.approval.task import HumanTask

LazyTask = Annotated["HumanTask", strawberry.lazy("signoff.schema.approval.task")]
# A page converts each of its rows' states and decisions: found by value, not by the enum's call.
_STATES = by_value(models.ProposalState)
_DECISIONS = by_value(models.Decision)


def _actor(row: models.Actor | None) -> Actor:
    assert row is not None  # approvals and proposals reference existing actors
    return Actor.from_model(row)


def _target(row: models.Target | None) -> Target:
    assert row is not None  # proposals reference existing targets
    return Target.from_model(row)


def _queue(row: models.Queue | None) -> Queue | None:
    return None if row is None else Queue.from_model(row)


def _approvals(rows: list[models.Approval]) -> list[Approval]:
    return [Approval.from_model(row) for row in rows]


def _task(row: models.HumanTask | None) -> HumanTask | None:
    from signoff.schema.approval.task import HumanTask

    return None if row is None else HumanTask.from_model(row)


@strawberry.type(description="One reviewer's decision on a proposal.")
class Approval(Node):
    id: strawberry.ID
    decision: models.Decision
    payload_digest: str
    revision: int = strawberry.field(
        description="The revision decided; an approval counts only for the current one."
    )
    reason: str | None
    created_at: datetime
    approver_id: strawberry.Private[str]
    approver = loaded_field(
        LoadedRelation(attrgetter("actor"), attrgetter("approver_id"), _actor),
        graphql_type=Actor,
    )

    @classmethod
    def from_model(cls, approval: models.Approval) -> Approval:
        return cls(
            id=strawberry.ID(approval.id),
            decision=_DECISIONS[approval.decision],
            payload_digest=approval.payload_digest,
            revision=approval.revision,
            reason=approval.reason,
            created_at=approval.created_at,
            approver_id=approval.approver_id,
        )


@strawberry.type(description="One revision of a proposal's payload: as proposed, or amended.")
class ProposalRevision(Node):
    id: strawberry.ID = strawberry.field(
        description="Made of its proposal's id and its number; amending changes no revision's id."
    )
    revision: int
    digest: str = strawberry.field(description="The payload digest of this revision.")
    payload: JSON
    diff: JSON = strawberry.field(
        description="RFC 6902 operations from the previous revision's payload ([] for 1)."
    )
    reason: str | None
    at: datetime
    amended_by_id: strawberry.Private[str | None]

    @strawberry.field(description="The reviewer who amended; null for the proposal as proposed.")
    async def amended_by(self, info: strawberry.Info) -> Actor | None:
        return None if self.amended_by_id is None else await load_actor(info, self.amended_by_id)

    @classmethod
    def from_model(cls, row: models.ProposalRevision) -> ProposalRevision:
        return cls(
            id=strawberry.ID(revision_node_id(row.proposal_id, row.revision)),
            revision=row.revision,
            digest=row.payload_digest,
            payload=JSON(row.payload),
            diff=JSON(row.diff),
            reason=row.reason,
            at=row.created_at,
            amended_by_id=row.amended_by_id,
        )


# Columns a page rarely shows are read from the row when a selection asks for them: a
# record decodes its JSON on first read (``signoff.models.records``).
def _preconditions(root: Proposal) -> JSON:
    return JSON(root.model.preconditions)


def _policy_rule(root: Proposal) -> JSON | None:
    return JSON(root.model.policy_rule)  # JSON(None) is None


def _result(root: Proposal) -> JSON | None:
    return JSON(result_document(root.model))  # JSON(None) is None


def _deadline_policy(root: Proposal) -> DeadlinePolicy:
    return DeadlinePolicy.of(root.model)


@strawberry.type(description="A proposed side-effecting action and where it stands.")
class Proposal(Node):
    id: strawberry.ID
    state: models.ProposalState
    action_code: str
    subject: JSON
    payload: JSON
    preconditions: JSON = strawberry.field(resolver=_preconditions)
    payload_digest: str = strawberry.field(
        description="What a reviewer approves: decideProposal must name this exact digest."
    )
    operation_key: str
    required_approvals: int
    approval_count: int
    revision: int = strawberry.field(
        description="1 as proposed; each amendment adds one (and gives a new payloadDigest)."
    )
    awaiting_proposer: bool = strawberry.field(
        description="An amendment waits for the proposing agent's acceptAmendment."
    )
    policy_rule: JSON | None = strawberry.field(
        resolver=_policy_rule,
        description="The target's approval-policy rule that set requiredApprovals "
        "({rule, name, approvals, queueId}; rule null: the policy's default).",
    )
    expires_at: datetime
    decided_at: datetime | None = strawberry.field(
        description="When it stopped waiting for approval: decided, rejected or expired at "
        "its deadline, or let through by its target as it was proposed."
    )
    created_at: datetime
    updated_at: datetime
    delivery_attempt_count: int = strawberry.field(
        description="Attempts of the current delivery (retryProposal resets it)."
    )
    delivery_terminal: bool = strawberry.field(
        description="Delivery has given up: dead-lettered until an operator retries it."
    )
    next_attempt_at: datetime | None
    last_error_code: str | None
    applied_at: datetime | None
    result: JSON | None = strawberry.field(
        resolver=_result,
        description="The receiver's JSON answer to the attempt that applied it, kept only "
        "when the target declares an outputSchema and the answer met it; for a target its "
        "agent executes, the result the agent reported. Null otherwise.",
    )
    agent_executes: bool = strawberry.field(
        description="Its target has no url: after approval the proposing agent executes it "
        "once (beginExecution, reportExecution); Signoff delivers nothing."
    )
    executor: str | None = strawberry.field(
        description="The label the agent gave when it took the execution (a host and process)."
    )
    execution_started_at: datetime | None
    compensates_proposal_id: strawberry.ID | None
    deadline_policy: DeadlinePolicy = strawberry.field(
        resolver=_deadline_policy,
        description="What happens if approval is not reached by expiresAt.",
    )
    escalation_level: int = strawberry.field(
        description="How many times the deadline escalated it to another queue."
    )
    model: strawberry.Private[models.Proposal]

    # The relations below answer at once when the list that holds this proposal loaded
    # them up front (``PageRelations``), and through their DataLoader otherwise.

    target = loaded_field(
        LoadedRelation(attrgetter("target"), attrgetter("model.target_id"), _target),
        graphql_type=Target,
    )
    queue = loaded_field(
        LoadedRelation(attrgetter("queue"), attrgetter("model.queue_id"), _queue),
        graphql_type=Queue | None,
    )
    proposed_by = loaded_field(
        LoadedRelation(attrgetter("actor"), attrgetter("model.proposed_by_id"), _actor),
        graphql_type=Actor,
    )

    @strawberry.field(description="The agent that took the execution, if one did.")
    async def executed_by(self, info: strawberry.Info) -> Actor | None:
        actor_id = self.model.executed_by_id
        return None if actor_id is None else await load_actor(info, actor_id)

    approvals = loaded_field(
        LoadedRelation(attrgetter("approvals_by_proposal"), attrgetter("id"), _approvals),
        graphql_type=list[Approval],
    )

    @strawberry.field(description="Every revision of the payload, oldest first.")
    async def revisions(self, info: strawberry.Info) -> list[ProposalRevision]:
        rows = await info.context.loaders.revisions_by_proposal.load(str(self.id))
        if rows:
            return [ProposalRevision.from_model(row) for row in rows]
        # Never amended: its one revision is the proposal as it stands.
        return [
            ProposalRevision(
                id=strawberry.ID(revision_node_id(str(self.id), 1)),
                revision=1,
                digest=self.payload_digest,
                payload=self.payload,
                diff=JSON([]),
                reason=None,
                at=self.created_at,
                amended_by_id=None,
            )
        ]

    @strawberry.field(
        description="Where the viewer stands: what they decided of the current revision, "
        "and whether they may approve or reject it now (and if not, the refusal's code)."
    )
    async def viewer_standing(self, info: strawberry.Info) -> ViewerStanding:
        found = await call(info, standing.viewer_standing, proposal_id=str(self.id))
        return ViewerStanding.of(found)

    @strawberry.field(
        description="What was approved, by whom, what became of it, and the proof that each "
        "of its audit records is in the signed log: one JSON document, checked offline by "
        "signoff audit verify-receipt. Proven against the checkpoint of checkpointSize "
        "records (default: the latest)."
    )
    async def decision_receipt(
        self, info: strawberry.Info, checkpoint_size: int | None = None
    ) -> JSON:
        return JSON(
            await call(
                info,
                receipts.decision_receipt,
                proposal_id=str(self.id),
                checkpoint_size=checkpoint_size,
            )
        )

    @strawberry.field(
        description="What happened to it, oldest first, from its audit records: proposed, "
        "amended, each reviewer's decision and digest, the quorum, the deadline, deliveries "
        "or executions, and (operators and admins) incidents about it."
    )
    async def timeline(self, info: strawberry.Info) -> list[TimelineEntry]:
        entries = await call(info, timeline.proposal_timeline, proposal_id=str(self.id))
        return [TimelineEntry.of(entry) for entry in entries]

    @strawberry.field(description="Every delivery attempt, oldest first.")
    async def attempts(self, info: strawberry.Info) -> list[DeliveryAttempt]:
        rows = await info.context.loaders.attempts_by_proposal.load(str(self.id))
        return [DeliveryAttempt.from_model(row) for row in rows]

    task = loaded_field(
        LoadedRelation(attrgetter("task_by_proposal"), attrgetter("id"), _task),
        description="The approval task (HUMAN targets only).",
        graphql_type=LazyTask | None,
    )

    @classmethod
    def from_model(cls, p: models.Proposal) -> Proposal:
        return cls(
            id=strawberry.ID(p.id),
            state=_STATES[p.state],
            action_code=p.action_code,
            subject=JSON(p.subject),
            payload=JSON(p.payload),
            payload_digest=p.payload_digest,
            operation_key=p.operation_key,
            required_approvals=p.required_approvals,
            approval_count=p.approval_count,
            revision=p.revision,
            awaiting_proposer=p.awaiting_proposer,
            expires_at=p.expires_at,
            decided_at=p.decided_at,
            created_at=p.created_at,
            updated_at=p.updated_at,
            delivery_attempt_count=p.delivery_attempt_count,
            delivery_terminal=p.delivery_terminal,
            next_attempt_at=p.next_attempt_at,
            last_error_code=p.last_error_code,
            applied_at=p.applied_at,
            agent_executes=p.agent_executes,
            executor=p.executor,
            execution_started_at=p.execution_started_at,
            compensates_proposal_id=(
                None
                if p.compensates_proposal_id is None
                else strawberry.ID(p.compensates_proposal_id)
            ),
            escalation_level=p.escalation_level,
            model=p,
        )


# The approvers of proposals: read with the approvals, not after them.
APPROVERS = Via(models.Approval, "approver_id", "proposal_id")

Wanted = tuple[RowLoader[Any], Iterable[str]] | Reached


async def warm_proposal_fully(
    info: strawberry.Info, proposal: models.Proposal, selected: Selected
) -> None:
    """``PageRelations`` for one proposal, its revisions, attempts and who executed it
    too: a live frame's proposal, executed for one event, answers from one read instead
    of a query per relation (none, where its writer handed them over: ``prime_relations``)."""
    context = context_of(info)
    loaders = context.loaders
    wanted = _wanted(loaders, [proposal], selected)
    if "executedBy" in selected and proposal.executed_by_id is not None:
        wanted.append((loaders.actor, [proposal.executed_by_id]))
    if "revisions" in selected:
        if proposal.revision > 1:
            # Who amended it is read only for a proposal amended (most never are).
            wanted.append((loaders.revisions_by_proposal, [proposal.id]))
        else:
            # Never amended at the record's version: no revision rows (``ProposalRevision``).
            loaders.revisions_by_proposal.prime_loaded({proposal.id: []})
    if "attempts" in selected:
        wanted.append((loaders.attempts_by_proposal, [proposal.id]))
    await warm(context, *wanted)


def prime_relations(
    info: strawberry.Info, proposal: models.Proposal, relations: ProposalRelations
) -> None:
    """Load what ``relations`` holds of ``proposal`` (read by its writer, as its commit
    leaves them: ``events.relations``) into the frame's loaders."""
    loaders = context_of(info).loaders
    loaders.approvals_by_proposal.prime_loaded({proposal.id: relations.approvals})
    loaders.revisions_by_proposal.prime_loaded({proposal.id: relations.revisions})
    loaders.attempts_by_proposal.prime_loaded({proposal.id: relations.attempts})
    loaders.target.prime_loaded({proposal.target_id: relations.target})
    loaders.actor.prime_loaded(relations.actors)


def _wanted(
    loaders: Loaders, proposals: Sequence[models.Proposal], selected: Selected
) -> list[Wanted]:
    return [
        _approvers(loaders, [p.id for p in proposals])
        if relation.via is APPROVERS
        else relation.wanted(proposals)
        for relation in _relations(loaders, selected)
    ]


@dataclass(frozen=True)
class _Relation:
    """A relation of proposals that a selection asks for: ``loader``'s rows whose keys
    are each proposal's ``pick`` column (or what ``via`` reaches from it)."""

    loader: RowLoader[Any]
    pick: str
    via: Via | None = None

    def wanted(self, proposals: Sequence[models.Proposal]) -> Wanted:
        pick = self.pick
        keys = [key for p in proposals if (key := getattr(p, pick)) is not None]
        return (self.loader, keys) if self.via is None else Reached(self.loader, keys, self.via)

    def along(self) -> Along:
        kind = self.loader.kind
        return Along(kind.model, kind.column, self.pick, kind.order_by, self.via)


def _relations(loaders: Loaders, selected: Selected) -> list[_Relation]:
    relations: list[_Relation] = []
    if "target" in selected:
        relations.append(_Relation(loaders.target, "target_id"))
    if "queue" in selected:
        relations.append(_Relation(loaders.queue, "queue_id"))
    if "task" in selected:
        relations.append(_Relation(loaders.task_by_proposal, "id"))
    if "proposedBy" in selected:
        relations.append(_Relation(loaders.actor, "proposed_by_id"))
    if "approvals" in selected:
        relations.append(_Relation(loaders.approvals_by_proposal, "id"))
        if "approver" in selected["approvals"]:
            relations.append(_Relation(loaders.actor, "id", APPROVERS))
    return relations


class PageRelations:
    """The relations a selection asks of a page's proposals (or of one proposal): read
    along the page (one round trip for the page and them) where its connection allows,
    else by the keys of the page's proposals once it is read, one query per kind and
    one round trip in all: either way each proposal's fields answer without awaiting."""

    def __init__(self, info: strawberry.Info, selected: Selected) -> None:
        self._context = context_of(info)
        self._relations = _relations(self._context.loaders, selected)

    @property
    def along(self) -> list[Along]:
        return [relation.along() for relation in self._relations]

    async def warm(self, page: Page[models.Proposal]) -> None:
        """Let the page's proposals answer their relations without awaiting."""
        await self.warm_read(page.items, page.along)

    async def warm_read(
        self, proposals: Sequence[models.Proposal], along: list[list[Any]] | None
    ) -> None:
        """``warm`` for ``proposals`` and the rows read ``along`` them, if they were."""
        wanted = [relation.wanted(proposals) for relation in self._relations]
        if along is None:
            await warm(self._context, *wanted)
            return
        for each, rows in zip(wanted, along, strict=True):
            prime_read(each, rows)


def _approvers(loaders: Loaders, ids: list[str]) -> Wanted:
    """The approvers of the approvals of ``ids``: by their ids where those approvals are
    loaded already (``prime_relations``), else reached from ``ids`` with them."""
    futures = loaders.approvals_by_proposal.futures
    loaded = [futures.get(proposal_id) for proposal_id in ids]
    if not all(f is not None and f.done() and f.exception() is None for f in loaded):
        return Reached(loaders.actor, ids, APPROVERS)
    return (loaders.actor, [a.approver_id for f in loaded if f for a in f.result()])


@strawberry.input
class ProposeActionInput:
    target_id: strawberry.ID
    action_code: str
    payload: JSON
    operation_key: str = strawberry.field(
        description="Your idempotency key: the same key with the same content replays."
    )
    subject: JSON | None = None
    preconditions: JSON | None = None
    expires_in_seconds: int | None = strawberry.field(
        default=None, description="Approval deadline, 60 s to 31 days (default 24 h)."
    )
    deadline_policy: DeadlineOverrideInput | None = strawberry.field(
        default=None, description="Override the target's deadline policy, within its bounds."
    )


@strawberry.type
class ProposeActionPayload:
    proposal: Proposal
    task: LazyTask | None
    replayed: bool


@strawberry.input
class DecideProposalInput:
    proposal_id: strawberry.ID
    decision: models.Decision
    payload_digest: str
    reason: str | None = None
    idempotency_key: str | None = None


@strawberry.type
class DecideProposalPayload:
    proposal: Proposal
    approval: Approval
    task: LazyTask | None
    replayed: bool
