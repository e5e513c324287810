"""The mutation root: each field takes one ``input`` and maps it onto a resolver."""

from __future__ import annotations

import strawberry

from signoff import models
from signoff.resolvers.access import actors
from signoff.resolvers.approval import (
    amendments,
    approvals,
    bulk_decisions,
    compensations,
    proposals,
    queues,
    tasks,
)
from signoff.resolvers.delivery import executions, results, retries
from signoff.resolvers.drafts import drafts
from signoff.resolvers.incidents import response as incident_response
from signoff.resolvers.reach import channels as notification_channels
from signoff.resolvers.reach import delegation
from signoff.resolvers.reach import links as approval_links
from signoff.resolvers.targets import controls as target_controls
from signoff.resolvers.targets import targets
from signoff.schema.access.token import (
    ApiToken,
    CreateTokenInput,
    CreateTokenPayload,
    RevokeTokenInput,
)
from signoff.schema.approval.amendment import (
    AcceptAmendmentInput,
    AcceptAmendmentPayload,
    AmendProposalInput,
    AmendProposalPayload,
)
from signoff.schema.approval.bulk_decision import (
    BulkDecisionResult,
    DecideProposalsInput,
    DecideProposalsPayload,
    items_of,
)
from signoff.schema.approval.proposal import (
    Approval,
    DecideProposalInput,
    DecideProposalPayload,
    Proposal,
    ProposalRevision,
    ProposeActionInput,
    ProposeActionPayload,
)
from signoff.schema.approval.queue import CreateQueueInput, Queue, QueueMemberInput
from signoff.schema.approval.task import (
    ClaimTaskInput,
    CompleteTaskInput,
    CompleteTaskPayload,
    CreateTaskInput,
    HumanTask,
    ReleaseTaskInput,
)
from signoff.schema.call import call, call_with
from signoff.schema.context import context_of
from signoff.schema.delivery.delivery import (
    BeginExecutionInput,
    BeginExecutionPayload,
    ProposeCompensationInput,
    ReportActionResultInput,
    ReportActionResultPayload,
    ReportExecutionInput,
    ReportExecutionPayload,
    RetryProposalInput,
    RetryProposalPayload,
)
from signoff.schema.delivery.incident import (
    AcknowledgeIncidentInput,
    Incident,
    IncidentPayload,
    OpenIncidentInput,
    OpenIncidentPayload,
    RepairAction,
    ResolveIncidentInput,
    RetryIncidentInput,
    RetryIncidentPayload,
)
from signoff.schema.delivery.target import (
    CloseTargetCircuitInput,
    PauseTargetInput,
    PauseTargetPayload,
    RegisterTargetInput,
    RegisterTargetPayload,
    ResumeTargetInput,
    RetireTargetInput,
    SetTargetLimitsInput,
    Target,
    TargetChangePayload,
)
from signoff.schema.drafts.draft import (
    CancelDraftInput,
    CheckDraftDispatchInput,
    Draft,
    DraftDispatchCheck,
    DraftPayload,
    ObserveDraftInput,
    PrepareDraftInput,
    ReserveDraftInput,
    UpdateDraftInput,
)
from signoff.schema.reach.approval_link import (
    ApprovalLink,
    CreateApprovalLinkInput,
    CreateApprovalLinkPayload,
    RevokeApprovalLinkInput,
)
from signoff.schema.reach.delegation import (
    Delegation,
    ReassignTaskInput,
    ReassignTaskPayload,
    SetDelegateInput,
)
from signoff.schema.reach.notification import (
    AddNotificationChannelInput,
    AddNotificationChannelPayload,
    DisableNotificationChannelInput,
    EnableNotificationChannelInput,
    NotificationChannel,
    RemoveNotificationChannelInput,
)


def _draft_payload(result: drafts.DraftResult) -> DraftPayload:
    return DraftPayload(draft=Draft.from_model(result.draft), replayed=result.replayed)


def _incident_payload(result: incident_response.IncidentResult) -> IncidentPayload:
    return IncidentPayload(incident=Incident.from_model(result.incident), replayed=result.replayed)


def _paused(result: targets.TargetResult) -> PauseTargetPayload:
    return PauseTargetPayload(target=Target.from_model(result.target), replayed=result.replayed)


def _target_changed(result: targets.TargetResult) -> TargetChangePayload:
    return TargetChangePayload(target=Target.from_model(result.target), replayed=result.replayed)


def _proposed(result: proposals.ProposeResult) -> ProposeActionPayload:
    return ProposeActionPayload(
        proposal=Proposal.from_model(result.proposal),
        task=_task(result.task),
        replayed=result.replayed,
    )


def _task(task: models.HumanTask | None) -> HumanTask | None:
    return None if task is None else HumanTask.from_model(task)


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Operators and admins.")
    async def create_queue(self, info: strawberry.Info, input: CreateQueueInput) -> Queue:
        return Queue.from_model(await call_with(info, queues.create_queue, input))

    @strawberry.mutation(
        description="Operators and admins: notify a webhook or Slack when a task enters the "
        "queue, is due soon or escalates to it."
    )
    async def add_notification_channel(
        self, info: strawberry.Info, input: AddNotificationChannelInput
    ) -> AddNotificationChannelPayload:
        added = await call_with(
            info,
            notification_channels.add_notification_channel,
            input,
            renamed={"approval_link_ttl_seconds": "link_ttl_seconds"},
        )
        return AddNotificationChannelPayload(
            channel=NotificationChannel.from_model(added.channel),
            signing_secret=added.signing_secret,
        )

    @strawberry.mutation(
        description="Operators and admins: the channel gets no notifications until enabled; "
        "those waiting for it are cancelled. A disabled channel is answered as it is."
    )
    async def disable_notification_channel(
        self, info: strawberry.Info, input: DisableNotificationChannelInput
    ) -> NotificationChannel:
        return NotificationChannel.from_model(
            await call_with(info, notification_channels.disable_notification_channel, input)
        )

    @strawberry.mutation(
        description="Operators and admins: a disabled channel gets new notifications again. "
        "An enabled channel is answered as it is."
    )
    async def enable_notification_channel(
        self, info: strawberry.Info, input: EnableNotificationChannelInput
    ) -> NotificationChannel:
        return NotificationChannel.from_model(
            await call_with(info, notification_channels.enable_notification_channel, input)
        )

    @strawberry.mutation(
        description="Operators and admins: remove a channel for good (it stays readable, with "
        "removedAt); those waiting for it are cancelled. Again: NOTIFICATION_CHANNEL_REMOVED."
    )
    async def remove_notification_channel(
        self, info: strawberry.Info, input: RemoveNotificationChannelInput
    ) -> NotificationChannel:
        return NotificationChannel.from_model(
            await call_with(info, notification_channels.remove_notification_channel, input)
        )

    @strawberry.mutation(description="Operators and admins: make a reviewer a queue member.")
    async def add_queue_member(self, info: strawberry.Info, input: QueueMemberInput) -> Queue:
        queue = await call_with(info, queues.add_queue_member, input)
        context_of(info).forget_viewers()
        return Queue.from_model(queue)

    @strawberry.mutation(
        description=(
            "Operators and admins: take a reviewer off a queue; its live subscriptions stop "
            "receiving the queue's events at once."
        )
    )
    async def remove_queue_member(self, info: strawberry.Info, input: QueueMemberInput) -> Queue:
        queue = await call_with(info, queues.remove_queue_member, input)
        context_of(info).forget_viewers()
        return Queue.from_model(queue)

    @strawberry.mutation(
        description="Admins: a new API token for the actor named (made if new, with `role`). "
        "The token is shown once, in the payload."
    )
    async def create_token(
        self, info: strawberry.Info, input: CreateTokenInput
    ) -> CreateTokenPayload:
        created = await call_with(info, actors.create_token, input)
        context_of(info).forget_viewers()
        return CreateTokenPayload(
            token=created.token, api_token=ApiToken.from_model(created.api_token)
        )

    @strawberry.mutation(
        description="Admins: revoke a token by its id; it authenticates no more, and its open "
        "websockets close. A revoked token is answered as it is."
    )
    async def revoke_token(self, info: strawberry.Info, input: RevokeTokenInput) -> ApiToken:
        token = await call_with(info, actors.revoke_token_by_id, input)
        context_of(info).forget_viewers()
        return ApiToken.from_model(token)

    @strawberry.mutation(description="Operators and admins. The signing secret is shown once.")
    async def register_target(
        self, info: strawberry.Info, input: RegisterTargetInput
    ) -> RegisterTargetPayload:
        registered = await call_with(
            info,
            targets.register_target,
            input,
            omit=("deadline_policy",),
            deadline_action=None if input.deadline_policy is None else input.deadline_policy.action,
            deadline_reason=None if input.deadline_policy is None else input.deadline_policy.reason,
            escalation=None if input.deadline_policy is None else input.deadline_policy.steps(),
        )
        return RegisterTargetPayload(
            target=Target.from_model(registered.target), signing_secret=registered.signing_secret
        )

    @strawberry.mutation(description="Operators and admins: the target takes no new proposals.")
    async def retire_target(self, info: strawberry.Info, input: RetireTargetInput) -> Target:
        return Target.from_model(await call_with(info, targets.retire_target, input))

    @strawberry.mutation(
        description=(
            "Operators and admins: hold the target's deliveries (its proposals wait QUEUED, "
            "nothing is sent) until resumeTarget. TARGET_ALREADY_PAUSED if it is paused."
        )
    )
    async def pause_target(
        self, info: strawberry.Info, input: PauseTargetInput
    ) -> PauseTargetPayload:
        return _paused(await call_with(info, targets.pause_target, input))

    @strawberry.mutation(
        description=(
            "Operators and admins: deliver a paused target's waiting proposals again, at once. "
            "TARGET_NOT_PAUSED if it is not paused."
        )
    )
    async def resume_target(
        self, info: strawberry.Info, input: ResumeTargetInput
    ) -> PauseTargetPayload:
        return _paused(await call_with(info, targets.resume_target, input))

    @strawberry.mutation(
        description=(
            "Operators and admins: change how many deliveries to the target may be in flight "
            "at once, and how many may start per second. What is left out stays as it is."
        )
    )
    async def set_target_limits(
        self, info: strawberry.Info, input: SetTargetLimitsInput
    ) -> TargetChangePayload:
        return _target_changed(await call_with(info, target_controls.set_target_limits, input))

    @strawberry.mutation(
        description=(
            "Operators and admins, once the receiver is fixed: close the target's OPEN or "
            "HALF_OPEN circuit at once and deliver its waiting proposals. "
            "TARGET_CIRCUIT_NOT_OPEN if it is closed."
        )
    )
    async def close_target_circuit(
        self, info: strawberry.Info, input: CloseTargetCircuitInput
    ) -> TargetChangePayload:
        return _target_changed(await call_with(info, target_controls.close_target_circuit, input))

    @strawberry.mutation(description="Agents. Idempotent by operationKey.")
    async def propose_action(
        self, info: strawberry.Info, input: ProposeActionInput
    ) -> ProposeActionPayload:
        return _proposed(
            await call_with(
                info,
                proposals.propose_action,
                input,
                omit=("deadline_policy",),
                deadline=None
                if input.deadline_policy is None
                else input.deadline_policy.to_override(),
            )
        )

    @strawberry.mutation(description="Reviewers of the proposal's queue.")
    async def decide_proposal(
        self, info: strawberry.Info, input: DecideProposalInput
    ) -> DecideProposalPayload:
        result = await call_with(info, approvals.decide_proposal, input)
        if result.approver is not None:
            # The answer's approver as the decision read it: no read of its own after commit.
            context_of(info).loaders.actor.prime(result.approver.id, result.approver)
        return DecideProposalPayload(
            proposal=Proposal.from_model(result.proposal),
            approval=Approval.from_model(result.approval),
            task=_task(result.task),
            replayed=result.replayed,
        )

    @strawberry.mutation(
        description=(
            "Reviewers: decide up to 100 proposals at once, each bound to its digest. Items are "
            "independent: one result per item, the decision or the item's refusal code."
        )
    )
    async def decide_proposals(
        self, info: strawberry.Info, input: DecideProposalsInput
    ) -> DecideProposalsPayload:
        result = await call_with(
            info,
            bulk_decisions.decide_proposals,
            input,
            omit=("items",),
            items=items_of(input.items),
        )
        return DecideProposalsPayload(
            bulk_id=strawberry.ID(result.bulk_id),
            results=[BulkDecisionResult.from_result(item) for item in result.items],
            replayed=result.replayed,
        )

    @strawberry.mutation(
        description=(
            "Reviewers of the proposal's queue: fix the payload instead of rejecting it. A new "
            "revision and digest; earlier approvals are void and the full quorum is needed again."
        )
    )
    async def amend_proposal(
        self, info: strawberry.Info, input: AmendProposalInput
    ) -> AmendProposalPayload:
        result = await call_with(info, amendments.amend_proposal, input)
        return AmendProposalPayload(
            proposal=Proposal.from_model(result.proposal),
            revision=ProposalRevision.from_model(result.revision),
            replayed=result.replayed,
        )

    @strawberry.mutation(
        description=(
            "The proposing agent, when its target asks for it: accept an amended revision "
            "(awaitingProposer) so that it may be delivered once approved."
        )
    )
    async def accept_amendment(
        self, info: strawberry.Info, input: AcceptAmendmentInput
    ) -> AcceptAmendmentPayload:
        result = await call_with(info, amendments.accept_amendment, input)
        return AcceptAmendmentPayload(
            proposal=Proposal.from_model(result.proposal), replayed=result.replayed
        )

    @strawberry.mutation
    async def create_task(self, info: strawberry.Info, input: CreateTaskInput) -> HumanTask:
        return HumanTask.from_model(await call_with(info, tasks.create_task, input))

    @strawberry.mutation(description="Take a lease on a task; claiming again renews it.")
    async def claim_task(self, info: strawberry.Info, input: ClaimTaskInput) -> HumanTask:
        return HumanTask.from_model(await call_with(info, tasks.claim_task, input))

    @strawberry.mutation
    async def release_task(self, info: strawberry.Info, input: ReleaseTaskInput) -> HumanTask:
        return HumanTask.from_model(await call_with(info, tasks.release_task, input))

    @strawberry.mutation(
        description="Hand a task you hold (operators: any waiting task) to another reviewer "
        "of its queue, or to their delegate while they are away; they hold it at once."
    )
    async def reassign_task(
        self, info: strawberry.Info, input: ReassignTaskInput
    ) -> ReassignTaskPayload:
        result = await call_with(info, delegation.reassign_task, input)
        return ReassignTaskPayload(
            task=HumanTask.from_model(result.task),
            offered_to_id=result.offered_to_id,
            delegated=result.delegated,
        )

    @strawberry.mutation(
        description="Reviewers: while you are away, tasks offered to you go to your delegate."
    )
    async def set_delegate(self, info: strawberry.Info, input: SetDelegateInput) -> Delegation:
        return Delegation.from_model(await call_with(info, delegation.set_delegate, input))

    @strawberry.mutation(description="Reviewers: end your delegation now; false if none.")
    async def clear_delegate(self, info: strawberry.Info) -> bool:
        return await call(info, delegation.clear_delegate)

    @strawberry.mutation(
        description="Operators and admins (or a reviewer for themself): a link for one "
        "reviewer to decide one approval task once, at most 72 h."
    )
    async def create_approval_link(
        self, info: strawberry.Info, input: CreateApprovalLinkInput
    ) -> CreateApprovalLinkPayload:
        created = await call_with(info, approval_links.create_approval_link, input)
        return CreateApprovalLinkPayload(
            link=ApprovalLink.from_model(created.link), path=created.path
        )

    @strawberry.mutation(description="Its reviewer, its maker, operators and admins.")
    async def revoke_approval_link(
        self, info: strawberry.Info, input: RevokeApprovalLinkInput
    ) -> ApprovalLink:
        return ApprovalLink.from_model(
            await call_with(info, approval_links.revoke_approval_link, input)
        )

    @strawberry.mutation(description="Approval tasks take {decision, reason?} and decide.")
    async def complete_task(
        self, info: strawberry.Info, input: CompleteTaskInput
    ) -> CompleteTaskPayload:
        result = await call_with(info, tasks.complete_task, input)
        return CompleteTaskPayload(task=HumanTask.from_model(result.task), replayed=result.replayed)

    @strawberry.mutation(description="Integrations: how an accepted (202) action ended.")
    async def report_action_result(
        self, info: strawberry.Info, input: ReportActionResultInput
    ) -> ReportActionResultPayload:
        result = await call_with(
            info,
            results.report_action_result,
            input,
            omit=("error_code", "provider_request_id", "retry_after_seconds", "status", "terminal"),
            result=results.ActionResult(
                status=results.ResultStatus(input.status),
                terminal=input.terminal,
                retry_after_seconds=input.retry_after_seconds,
                error_code=input.error_code,
                provider_request_id=input.provider_request_id,
            ),
        )
        return ReportActionResultPayload(
            proposal=Proposal.from_model(result.proposal), replayed=result.replayed
        )

    @strawberry.mutation(
        description="Agents: take the one right to execute your approved proposal on a "
        "target without a url; a second call is refused EXECUTION_CONSUMED."
    )
    async def begin_execution(
        self, info: strawberry.Info, input: BeginExecutionInput
    ) -> BeginExecutionPayload:
        began = await call_with(info, executions.begin_execution, input)
        return BeginExecutionPayload(
            proposal=Proposal.from_model(began.proposal), lease=began.lease
        )

    @strawberry.mutation(description="Agents: how the execution you began went.")
    async def report_execution(
        self, info: strawberry.Info, input: ReportExecutionInput
    ) -> ReportExecutionPayload:
        reported = await call_with(
            info,
            executions.report_execution,
            input,
            omit=("outcome", "result"),
            outcome=executions.ExecutionOutcome(input.outcome),
            result=input.result,
        )
        return ReportExecutionPayload(
            proposal=Proposal.from_model(reported.proposal), replayed=reported.replayed
        )

    @strawberry.mutation(description="Operators: deliver a terminally failed proposal again.")
    async def retry_proposal(
        self, info: strawberry.Info, input: RetryProposalInput
    ) -> RetryProposalPayload:
        result = await call_with(info, retries.retry_proposal, input)
        return RetryProposalPayload(
            proposal=Proposal.from_model(result.proposal), replayed=result.replayed
        )

    @strawberry.mutation(description="Operators: propose the action that undoes an applied one.")
    async def propose_compensation(
        self, info: strawberry.Info, input: ProposeCompensationInput
    ) -> ProposeActionPayload:
        return _proposed(await call_with(info, compensations.propose_compensation, input))

    @strawberry.mutation(description="Operators: take an incident up.")
    async def acknowledge_incident(
        self, info: strawberry.Info, input: AcknowledgeIncidentInput
    ) -> IncidentPayload:
        return _incident_payload(
            await call_with(info, incident_response.acknowledge_incident, input)
        )

    @strawberry.mutation(
        description=(
            "Operators: send the incident's failed delivery again (attempts reset); a repair "
            "action records it. If it fails again, the incident re-opens."
        )
    )
    async def retry_incident(
        self, info: strawberry.Info, input: RetryIncidentInput
    ) -> RetryIncidentPayload:
        result = await call_with(info, incident_response.retry_incident, input)
        return RetryIncidentPayload(
            incident=Incident.from_model(result.incident),
            repair_action=RepairAction.from_model(result.repair_action),
            replayed=result.replayed,
        )

    @strawberry.mutation(description="Operators: close an incident with what was done about it.")
    async def resolve_incident(
        self, info: strawberry.Info, input: ResolveIncidentInput
    ) -> IncidentPayload:
        return _incident_payload(await call_with(info, incident_response.resolve_incident, input))

    @strawberry.mutation(
        description=(
            "Operators and integrations: raise an incident, one per key (while unresolved, the "
            "same key returns it unchanged)."
        )
    )
    async def open_incident(
        self, info: strawberry.Info, input: OpenIncidentInput
    ) -> OpenIncidentPayload:
        result = await call_with(info, incident_response.open_incident, input)
        return OpenIncidentPayload(
            incident=Incident.from_model(result.incident), deduplicated=result.deduplicated
        )

    @strawberry.mutation(description="Agents: prepare a draft for a person (requestId replays).")
    async def prepare_draft(self, info: strawberry.Info, input: PrepareDraftInput) -> DraftPayload:
        return _draft_payload(await call_with(info, drafts.prepare_draft, input))

    @strawberry.mutation(
        description=(
            "The preparing agent (source AGENT) or the person (USER) edits a draft; an "
            "agent's patch never overwrites a field the person edited."
        )
    )
    async def update_draft(self, info: strawberry.Info, input: UpdateDraftInput) -> DraftPayload:
        return _draft_payload(await call_with(info, drafts.update_draft, input))

    @strawberry.mutation(description="The person: cancel a draft, or an undispatched reservation.")
    async def cancel_draft(self, info: strawberry.Info, input: CancelDraftInput) -> DraftPayload:
        return _draft_payload(await call_with(info, drafts.cancel_draft, input))

    @strawberry.mutation(
        description="The person: fix the reviewed values; the draft gets its operation key."
    )
    async def reserve_draft(self, info: strawberry.Info, input: ReserveDraftInput) -> DraftPayload:
        return _draft_payload(
            await call_with(
                info, drafts.reserve_draft, input, renamed={"values_digest": "values_digest_"}
            )
        )

    @strawberry.mutation(
        description=(
            "Integrations (the executor), once before sending: a reservation passes exactly "
            "once; without draftId it is the ordinary form's check."
        )
    )
    async def check_draft_dispatch(
        self, info: strawberry.Info, input: CheckDraftDispatchInput
    ) -> DraftDispatchCheck:
        result = await call_with(
            info, drafts.check_draft_dispatch, input, renamed={"values_digest": "values_digest_"}
        )
        return DraftDispatchCheck(allowed=result.allowed, managed=result.managed)

    @strawberry.mutation(description="Integrations: what became of a reservation.")
    async def observe_draft(self, info: strawberry.Info, input: ObserveDraftInput) -> DraftPayload:
        return _draft_payload(await call_with(info, drafts.observe_draft, input))
