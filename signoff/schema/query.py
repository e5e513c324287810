"""The query root."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any, cast

import strawberry
from strawberry.scalars import JSON

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.errors import SignoffError
from signoff.resolvers.access import actors, identities
from signoff.resolvers.approval import (
    bulk_decisions,
    history,
    proposals,
    queue_stats,
    queues,
    tasks,
)
from signoff.resolvers.approval import policies as approval_policies
from signoff.resolvers.core import audit, nodes
from signoff.resolvers.core.pagination import Page
from signoff.resolvers.drafts import reads as draft_reads
from signoff.resolvers.feed import subscriptions
from signoff.resolvers.incidents import operations, statistics
from signoff.resolvers.incidents import response as incident_response
from signoff.resolvers.reach import delegation
from signoff.resolvers.targets import targets
from signoff.schema.access.actor import Actor, Viewer
from signoff.schema.access.audit import (
    AuditCheckpoint,
    AuditConsistencyProof,
    AuditEvent,
    AuditInclusionProof,
)
from signoff.schema.access.claim_mapping import ClaimMapping
from signoff.schema.access.token import ApiToken
from signoff.schema.approval.bulk_decision import (
    BulkDecisionItemInput,
    BulkDecisionPreview,
    items_of,
)
from signoff.schema.approval.policy import PolicySimulation
from signoff.schema.approval.proposal import (
    Approval,
    PageRelations,
    Proposal,
    ProposalRevision,
)
from signoff.schema.approval.queue import Queue, QueueStats
from signoff.schema.approval.task import HumanTask
from signoff.schema.call import call
from signoff.schema.context import context_of
from signoff.schema.delivery.delivery import DeliveryAttempt
from signoff.schema.delivery.incident import DeadLetter, Incident, RepairAction
from signoff.schema.delivery.operations import (
    OperationsSnapshot,
    OperationsStatistics,
    ReconciliationRun,
)
from signoff.schema.delivery.target import Target
from signoff.schema.drafts.draft import Draft
from signoff.schema.drafts.draft_reference import DraftReference
from signoff.schema.lookahead import selected
from signoff.schema.node import Node
from signoff.schema.pagination import PageConnection, connection, nodes_selected
from signoff.schema.reach.approval_link import ApprovalLink
from signoff.schema.reach.delegation import Delegation
from signoff.schema.reach.notification import NotificationChannel

# Each kind of row ``node`` finds, and the GraphQL object for it.
NODE_TYPES: dict[type[Any], Callable[[Any], Node]] = {
    models.Proposal: Proposal.from_model,
    models.HumanTask: HumanTask.from_model,
    models.Queue: Queue.from_model,
    models.Target: Target.from_model,
    models.Incident: Incident.from_model,
    models.Actor: Actor.from_model,
    models.Approval: Approval.from_model,
    models.ApprovalLink: ApprovalLink.from_model,
    models.AuditEvent: AuditEvent.from_model,
    models.DeadLetter: DeadLetter.from_model,
    models.Delegation: Delegation.from_model,
    models.DeliveryAttempt: DeliveryAttempt.from_model,
    models.Draft: Draft.from_model,
    models.NotificationChannel: NotificationChannel.from_model,
    models.ProposalRevision: ProposalRevision.from_model,
    models.ReconciliationRun: ReconciliationRun.from_model,
    models.RepairAction: RepairAction.from_model,
    models.ApiToken: ApiToken.from_model,
}


def as_node(row: nodes.NodeModel) -> Node:
    """The GraphQL object for a row ``node`` found."""
    return NODE_TYPES[type(row)](row)


async def _node_or_refusal(result: nodes.NodeModel | SignoffError) -> Node:
    if isinstance(result, SignoffError):
        raise result
    return as_node(result)


async def _proposal_page(
    info: strawberry.Info,
    resolver: Callable[..., Awaitable[Page[models.Proposal]]],
    **arguments: Any,
) -> PageConnection[Proposal]:
    """A page of proposals from ``resolver``, the relations its selection asks for read
    along it."""
    relations = PageRelations(info, nodes_selected(info, depth=2))
    page = await call(info, resolver, along=relations.along, **arguments)
    await relations.warm(page)
    return connection(page, Proposal.from_model)


@strawberry.type
class Query:
    @strawberry.field(
        description=(
            "Any object with an id, by its id alone (Relay), under the same rules as its own "
            "read path. An id no object has, a malformed one, and an object you may not see "
            "are all NOT_FOUND."
        )
    )
    async def node(self, info: strawberry.Info, id: strawberry.ID) -> Node:
        return as_node(await call(info, nodes.get_node, node_id=id))

    @strawberry.field(
        description=(
            "Objects by their ids (at most 100), in the order given; one that cannot be read "
            "is null, with its own error."
        )
    )
    async def nodes(self, info: strawberry.Info, ids: list[strawberry.ID]) -> list[Node | None]:
        results = await call(info, nodes.get_nodes, node_ids=ids)
        # graphql-core awaits each item on its own, so a refused id fails alone, at its index.
        return cast("list[Node | None]", [_node_or_refusal(r) for r in results])

    @strawberry.field(description="Who the token belongs to.")
    async def viewer(self, info: strawberry.Info) -> Viewer:
        viewer = await context_of(info).viewer()
        return Viewer(
            actor=Actor.from_model(viewer.actor),
            queue_ids=[strawberry.ID(q) for q in sorted(viewer.queue_ids)],
        )

    @strawberry.field(
        description="Admins: API tokens, newest first, without their values; live ones only "
        "unless `revoked`; `actorId` narrows to one actor's."
    )
    async def tokens(
        self, info: strawberry.Info, actor_id: strawberry.ID | None = None, revoked: bool = False
    ) -> list[ApiToken]:
        rows = await call(info, actors.list_tokens, actor_id=actor_id, revoked=revoked)
        return [ApiToken.from_model(row) for row in rows]

    @strawberry.field(
        description="Operators and admins: delegations standing now or later, soonest end first."
    )
    async def delegations(self, info: strawberry.Info) -> list[Delegation]:
        return [Delegation.from_model(d) for d in await call(info, delegation.list_delegations)]

    @strawberry.field(
        description="Admins: the sign-in claim mapping (SIGNOFF_OIDC_CLAIMS_FILE) this server "
        "started with; null when sign-in with an OpenID provider is not set up."
    )
    async def claim_mapping(self, info: strawberry.Info) -> ClaimMapping | None:
        authenticator = context_of(info).authenticator
        provider = None if authenticator is None else authenticator.provider
        mapping = None if provider is None else provider.settings.mapping
        read = await call(info, identities.read_claim_mapping, mapping=mapping)
        return None if read is None else ClaimMapping.from_read(read)

    @strawberry.field(
        description=(
            "Actors by name, at most 100 a page, with their ids; `role` and `name` (exact) "
            "narrow it. Operators and admins."
        )
    )
    async def actors(
        self,
        info: strawberry.Info,
        role: models.Role | None = None,
        name: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[Actor]:
        page = await call(info, actors.list_actors, role=role, name=name, first=first, after=after)
        return connection(page, Actor.from_model)

    @strawberry.field(
        description=(
            "The change feed's newest cursor. Load what you display, then subscribe with "
            "`after` set to this value: nothing committed in between is missed."
        )
    )
    async def change_feed_cursor(self, info: strawberry.Info) -> str:
        return await call(info, subscriptions.current_cursor)

    @strawberry.field
    async def queues(self, info: strawberry.Info) -> list[Queue]:
        return [Queue.from_model(q) for q in await call(info, queues.list_queues)]

    @strawberry.field
    async def queue(self, info: strawberry.Info, id: strawberry.ID) -> Queue:
        return Queue.from_model(await call(info, queues.get_queue, queue_id=id))

    @strawberry.field(
        description="Reviewers of the queue, operators and admins: open items, the oldest "
        "one's age, items past their due time, median time to decision over the last day."
    )
    async def queue_stats(self, info: strawberry.Info, queue_id: strawberry.ID) -> QueueStats:
        stats = await call(info, queue_stats.queue_stats, queue_id=queue_id)
        return QueueStats(
            open_items=stats.open_items,
            oldest_age_seconds=stats.oldest_age_seconds,
            past_sla=stats.past_sla,
            median_decision_seconds=stats.median_decision_seconds,
            decided_in_window=stats.decided_in_window,
            window_seconds=stats.window_seconds,
        )

    @strawberry.field
    async def targets(self, info: strawberry.Info) -> list[Target]:
        return [Target.from_model(t) for t in await call(info, targets.list_targets)]

    @strawberry.field
    async def target(self, info: strawberry.Info, id: strawberry.ID) -> Target:
        return Target.from_model(await call(info, targets.get_target, target_id=id))

    @strawberry.field
    async def proposal(self, info: strawberry.Info, id: strawberry.ID) -> Proposal:
        relations = PageRelations(info, selected(info, depth=2))
        proposal, along = await call(
            info, proposals.read_proposal_along, proposal_id=id, along=relations.along
        )
        await relations.warm_read([proposal], along)
        return Proposal.from_model(proposal)

    @strawberry.field(
        description=(
            "Reviewers: what decideProposals would do with these items now: refusals and why, "
            "counts by target and by state, and each target's summaryField total."
        )
    )
    async def bulk_decision_preview(
        self, info: strawberry.Info, items: list[BulkDecisionItemInput]
    ) -> BulkDecisionPreview:
        preview = await call(info, bulk_decisions.preview_bulk_decision, items=items_of(items))
        return BulkDecisionPreview.from_preview(preview)

    @strawberry.field(
        description="Which approval-policy rule a payload would match on a target, and why."
    )
    async def simulate_policy(
        self, info: strawberry.Info, target_id: strawberry.ID, payload: JSON
    ) -> PolicySimulation:
        simulated = await call(
            info, approval_policies.simulate_policy, target_id=target_id, payload=payload
        )
        return PolicySimulation.from_simulation(simulated)

    @strawberry.field(description="Newest first, at most 100 a page.")
    async def proposals(
        self,
        info: strawberry.Info,
        state: models.ProposalState | None = None,
        queue_id: strawberry.ID | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[Proposal]:
        return await _proposal_page(
            info, proposals.list_proposals, state=state, queue_id=queue_id, first=first, after=after
        )

    @strawberry.field(
        description=(
            "Decided proposals (every state but APPROVAL_REQUIRED), most recently decided "
            "first, at most 100 a page, as `proposals` shows them: agents their own, "
            "reviewers those of their queues. Narrow by states, target, proposing agent, a "
            "reviewer who decided them, when they were decided (decidedAfter inclusive, "
            "decidedBefore exclusive) and words in their subject (case-insensitive)."
        )
    )
    async def history(
        self,
        info: strawberry.Info,
        states: list[models.ProposalState] | None = None,
        target_id: strawberry.ID | None = None,
        proposed_by_id: strawberry.ID | None = None,
        reviewer_id: strawberry.ID | None = None,
        decided_after: datetime | None = None,
        decided_before: datetime | None = None,
        search: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[Proposal]:
        narrowed = history.HistoryFilter(
            states=states,
            target_id=target_id,
            proposed_by_id=proposed_by_id,
            reviewer_id=reviewer_id,
            decided_after=decided_after,
            decided_before=decided_before,
            search=search,
        )
        return await _proposal_page(
            info, history.list_history, narrowed=narrowed, first=first, after=after
        )

    @strawberry.field
    async def task(self, info: strawberry.Info, id: strawberry.ID) -> HumanTask:
        return HumanTask.from_model(await call(info, tasks.get_task, task_id=id))

    @strawberry.field(description="Highest priority first, then soonest due, then oldest.")
    async def tasks(
        self,
        info: strawberry.Info,
        queue_id: strawberry.ID | None = None,
        state: models.TaskState | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[HumanTask]:
        page = await call(
            info, tasks.list_tasks, queue_id=queue_id, state=state, first=first, after=after
        )
        return connection(page, HumanTask.from_model)

    @strawberry.field(description="Newest first. Operators and admins.")
    async def audit_events(
        self,
        info: strawberry.Info,
        target_type: str | None = None,
        target_id: strawberry.ID | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[AuditEvent]:
        page = await call(
            info,
            audit.list_audit_events,
            target_type=target_type,
            target_id=target_id,
            first=first,
            after=after,
        )
        return connection(page, AuditEvent.from_model)

    @strawberry.field(description="The audit log's latest signed checkpoint; null before one.")
    async def audit_checkpoint(self, info: strawberry.Info) -> AuditCheckpoint | None:
        found = await call(info, audit.latest_checkpoint)
        return None if found is None else AuditCheckpoint.from_model(found)

    @strawberry.field(
        description="The proof that an audit record is in the log of treeSize records "
        "(default: the latest checkpoint's). Operators and admins."
    )
    async def audit_inclusion_proof(
        self, info: strawberry.Info, event_id: strawberry.ID, tree_size: int | None = None
    ) -> AuditInclusionProof:
        found = await call(info, audit.inclusion_proof, event_id=event_id, tree_size=tree_size)
        return AuditInclusionProof(
            position=found.entry["position"],
            tree_size=found.tree_size,
            leaf_hash=found.leaf_hash,
            entry=JSON(found.entry),
            proof=found.proof,
        )

    @strawberry.field(description="The proof that the log of `to` records extends that of `from`.")
    async def audit_consistency_proof(
        self,
        info: strawberry.Info,
        from_size: Annotated[int, strawberry.argument(name="from")],
        to_size: Annotated[int, strawberry.argument(name="to")],
    ) -> AuditConsistencyProof:
        proof = await call(info, audit.consistency_proof, old_size=from_size, new_size=to_size)
        return AuditConsistencyProof(from_size=from_size, to_size=to_size, proof=proof)

    @strawberry.field(
        description="Most severe first, then most recently seen. Operators and admins."
    )
    async def incidents(
        self,
        info: strawberry.Info,
        state: models.IncidentState | None = None,
        severity: models.Severity | None = None,
        category: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[Incident]:
        page = await call(
            info,
            incident_response.list_incidents,
            state=state,
            severity=severity,
            category=category,
            first=first,
            after=after,
        )
        return connection(page, Incident.from_model)

    @strawberry.field(description="Operators and admins.")
    async def incident(self, info: strawberry.Info, id: strawberry.ID) -> Incident:
        row = await call(info, incident_response.get_incident, incident_id=id)
        return Incident.from_model(row)

    @strawberry.field(
        description="Backlogs, open incidents and reconciliation runs. Operators and admins."
    )
    async def operations_snapshot(self, info: strawberry.Info) -> OperationsSnapshot:
        return OperationsSnapshot.from_operations(await call(info, operations.operations_snapshot))

    @strawberry.field(
        description=(
            "The last 24 hours, hour by hour: proposals decided and applied, time to "
            "decision, open incidents. Operators and admins."
        )
    )
    async def operations_statistics(self, info: strawberry.Info) -> OperationsStatistics:
        stats = await call(info, statistics.operations_statistics)
        return OperationsStatistics.from_statistics(stats)

    @strawberry.field(description="Newest first. Operators and admins.")
    async def dead_letters(
        self,
        info: strawberry.Info,
        state: models.DeadLetterState | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> PageConnection[DeadLetter]:
        page = await call(info, operations.list_dead_letters, state=state, first=first, after=after)
        return connection(page, DeadLetter.from_model)

    @strawberry.field(
        description=(
            "One of your drafts in that session (admins: anyone's). A draft of another "
            "account, or of another session, is NOT_FOUND."
        )
    )
    async def draft(self, info: strawberry.Info, id: strawberry.ID, session_id: str) -> Draft:
        row = await call(info, draft_reads.get_draft, draft_id=id, session_id=session_id)
        return Draft.from_model(row)

    @strawberry.field(
        description=(
            "Your newest 50 drafts of a session, with values, oldest first; TOO_LARGE past "
            "8 MiB of values (then list draftReferences). Admins may name an accountId."
        )
    )
    async def drafts(
        self, info: strawberry.Info, session_id: str, account_id: strawberry.ID | None = None
    ) -> list[Draft]:
        rows = await call(
            info, draft_reads.list_drafts, session_id=session_id, account_id=account_id
        )
        return [Draft.from_model(row) for row in rows]

    @strawberry.field(
        description=(
            "Your newest 1,000 drafts of a session without their values, oldest first. "
            "Admins may name an accountId."
        )
    )
    async def draft_references(
        self, info: strawberry.Info, session_id: str, account_id: strawberry.ID | None = None
    ) -> list[DraftReference]:
        rows = await call(
            info, draft_reads.list_draft_references, session_id=session_id, account_id=account_id
        )
        return [DraftReference.from_row(row) for row in rows]
