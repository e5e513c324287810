"""The mutation root: each field takes one ``input`` and maps it onto a resolver."""

from __future__ import annotations

import strawberry

from signoff import models
from signoff.resolvers.approval import (
    amendments,
    approvals,
    bulk_decisions,
    compensations,
    proposals,
    queues,
    tasks,
)
from signoff.resolvers.delivery import results, retries
from signoff.resolvers.drafts import drafts
from signoff.resolvers.incidents import response as incident_response
from signoff.resolvers.reach import channels as notification_channels
from signoff.resolvers.reach import delegation
from signoff.resolvers.reach import links as approval_links
from signoff.resolvers.targets import controls as target_controls
from signoff.resolvers.targets import targets
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
from signoff.schema.call import call
from signoff.schema.context import context_of
from signoff.schema.delivery.delivery import (
    ProposeCompensationInput,
    ReportActionResultInput,
    ReportActionResultPayload,
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


def _task(task: models.HumanTask | None) -> HumanTask | None:
    return None if task is None else HumanTask.from_model(task)


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Operators and admins.")
    async def create_queue(self, info: strawberry.Info, input: CreateQueueInput) -> Queue:
        queue = await call(
            info,
            queues.create_queue,
            slug=input.slug,
            name=input.name,
            claim_ttl_seconds=input.claim_ttl_seconds,
            default_due_seconds=input.default_due_seconds,
            idempotency_key=input.idempotency_key,
            reminder_percents=input.reminder_percents,
        )
        return Queue.from_model(queue)

    @strawberry.mutation(
        description="Operators and admins: notify a webhook or Slack when a task enters the "
        "queue, is due soon or escalates to it."
    )
    async def add_notification_channel(
        self, info: strawberry.Info, input: AddNotificationChannelInput
    ) -> AddNotificationChannelPayload:
        added = await call(
            info,
            notification_channels.add_notification_channel,
            queue_id=input.queue_id,
            kind=input.kind,
            url=input.url,
            include_payload=input.include_payload,
            reviewer_id=input.reviewer_id,
            link_ttl_seconds=input.approval_link_ttl_seconds,
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
        channel = await call(
            info, notification_channels.disable_notification_channel, channel_id=input.channel_id
        )
        return NotificationChannel.from_model(channel)

    @strawberry.mutation(
        description="Operators and admins: a disabled channel gets new notifications again. "
        "An enabled channel is answered as it is."
    )
    async def enable_notification_channel(
        self, info: strawberry.Info, input: EnableNotificationChannelInput
    ) -> NotificationChannel:
        channel = await call(
            info, notification_channels.enable_notification_channel, channel_id=input.channel_id
        )
        return NotificationChannel.from_model(channel)

    @strawberry.mutation(
        description="Operators and admins: remove a channel for good (it stays readable, with "
        "removedAt); those waiting for it are cancelled. Again: NOTIFICATION_CHANNEL_REMOVED."
    )
    async def remove_notification_channel(
        self, info: strawberry.Info, input: RemoveNotificationChannelInput
    ) -> NotificationChannel:
        channel = await call(
            info, notification_channels.remove_notification_channel, channel_id=input.channel_id
        )
        return NotificationChannel.from_model(channel)

    @strawberry.mutation(description="Operators and admins: make a reviewer a queue member.")
    async def add_queue_member(self, info: strawberry.Info, input: QueueMemberInput) -> Queue:
        queue = await call(
            info, queues.add_queue_member, queue_id=input.queue_id, actor_id=input.actor_id
        )
        context_of(info).forget_viewers()
        return Queue.from_model(queue)

    @strawberry.mutation(
        description=(
            "Operators and admins: take a reviewer off a queue; its live subscriptions stop "
            "receiving the queue's events at once."
        )
    )
    async def remove_queue_member(self, info: strawberry.Info, input: QueueMemberInput) -> Queue:
        queue = await call(
            info, queues.remove_queue_member, queue_id=input.queue_id, actor_id=input.actor_id
        )
        context_of(info).forget_viewers()
        return Queue.from_model(queue)

    @strawberry.mutation(description="Operators and admins. The signing secret is shown once.")
    async def register_target(
        self, info: strawberry.Info, input: RegisterTargetInput
    ) -> RegisterTargetPayload:
        registered = await call(
            info,
            targets.register_target,
            name=input.name,
            url=input.url,
            input_schema=input.input_schema,
            approval_mode=input.approval_mode,
            queue_id=input.queue_id,
            method=input.method,
            output_schema=input.output_schema,
            required_approvals=input.required_approvals,
            max_attempts=input.max_attempts,
            timeout_seconds=input.timeout_seconds,
            max_concurrency=input.max_concurrency,
            rate_per_second=input.rate_per_second,
            idempotency_key=input.idempotency_key,
            amendable=input.amendable,
            amendments_need_proposer=input.amendments_need_proposer,
            summary_field=input.summary_field,
            approval_policy=input.approval_policy,
            deadline_action=None if input.deadline_policy is None else input.deadline_policy.action,
            deadline_reason=None if input.deadline_policy is None else input.deadline_policy.reason,
            escalation=None if input.deadline_policy is None else input.deadline_policy.steps(),
        )
        return RegisterTargetPayload(
            target=Target.from_model(registered.target), signing_secret=registered.signing_secret
        )

    @strawberry.mutation(description="Operators and admins: the target takes no new proposals.")
    async def retire_target(self, info: strawberry.Info, input: RetireTargetInput) -> Target:
        target = await call(info, targets.retire_target, target_id=input.target_id)
        return Target.from_model(target)

    @strawberry.mutation(
        description=(
            "Operators and admins: hold the target's deliveries (its proposals wait QUEUED, "
            "nothing is sent) until resumeTarget. TARGET_ALREADY_PAUSED if it is paused."
        )
    )
    async def pause_target(
        self, info: strawberry.Info, input: PauseTargetInput
    ) -> PauseTargetPayload:
        result = await call(
            info,
            targets.pause_target,
            target_id=input.target_id,
            reason=input.reason,
            idempotency_key=input.idempotency_key,
        )
        return PauseTargetPayload(target=Target.from_model(result.target), replayed=result.replayed)

    @strawberry.mutation(
        description=(
            "Operators and admins: deliver a paused target's waiting proposals again, at once. "
            "TARGET_NOT_PAUSED if it is not paused."
        )
    )
    async def resume_target(
        self, info: strawberry.Info, input: ResumeTargetInput
    ) -> PauseTargetPayload:
        result = await call(
            info,
            targets.resume_target,
            target_id=input.target_id,
            idempotency_key=input.idempotency_key,
        )
        return PauseTargetPayload(target=Target.from_model(result.target), replayed=result.replayed)

    @strawberry.mutation(
        description=(
            "Operators and admins: change how many deliveries to the target may be in flight "
            "at once, and how many may start per second. What is left out stays as it is."
        )
    )
    async def set_target_limits(
        self, info: strawberry.Info, input: SetTargetLimitsInput
    ) -> TargetChangePayload:
        result = await call(
            info,
            target_controls.set_target_limits,
            target_id=input.target_id,
            max_concurrency=input.max_concurrency,
            rate_per_second=input.rate_per_second,
            clear_rate=input.clear_rate,
            idempotency_key=input.idempotency_key,
        )
        return TargetChangePayload(
            target=Target.from_model(result.target), replayed=result.replayed
        )

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
        result = await call(
            info,
            target_controls.close_target_circuit,
            target_id=input.target_id,
            reason=input.reason,
            idempotency_key=input.idempotency_key,
        )
        return TargetChangePayload(
            target=Target.from_model(result.target), replayed=result.replayed
        )

    @strawberry.mutation(description="Agents. Idempotent by operationKey.")
    async def propose_action(
        self, info: strawberry.Info, input: ProposeActionInput
    ) -> ProposeActionPayload:
        result = await call(
            info,
            proposals.propose_action,
            target_id=input.target_id,
            action_code=input.action_code,
            operation_key=input.operation_key,
            payload=input.payload,
            subject=input.subject,
            preconditions=input.preconditions,
            expires_in_seconds=input.expires_in_seconds,
            deadline=None if input.deadline_policy is None else input.deadline_policy.to_override(),
        )
        return ProposeActionPayload(
            proposal=Proposal.from_model(result.proposal),
            task=_task(result.task),
            replayed=result.replayed,
        )

    @strawberry.mutation(description="Reviewers of the proposal's queue.")
    async def decide_proposal(
        self, info: strawberry.Info, input: DecideProposalInput
    ) -> DecideProposalPayload:
        result = await call(
            info,
            approvals.decide_proposal,
            proposal_id=input.proposal_id,
            decision=input.decision,
            payload_digest=input.payload_digest,
            reason=input.reason,
            idempotency_key=input.idempotency_key,
        )
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
        result = await call(
            info,
            bulk_decisions.decide_proposals,
            items=items_of(input.items),
            decision=input.decision,
            idempotency_key=input.idempotency_key,
            reason=input.reason,
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
        result = await call(
            info,
            amendments.amend_proposal,
            proposal_id=input.proposal_id,
            based_on_digest=input.based_on_digest,
            reason=input.reason,
            payload=input.payload,
            patch=input.patch,
            idempotency_key=input.idempotency_key,
        )
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
        result = await call(
            info,
            amendments.accept_amendment,
            proposal_id=input.proposal_id,
            payload_digest=input.payload_digest,
            idempotency_key=input.idempotency_key,
        )
        return AcceptAmendmentPayload(
            proposal=Proposal.from_model(result.proposal), replayed=result.replayed
        )

    @strawberry.mutation
    async def create_task(self, info: strawberry.Info, input: CreateTaskInput) -> HumanTask:
        task = await call(
            info,
            tasks.create_task,
            queue_id=input.queue_id,
            kind=input.kind,
            title=input.title,
            context=input.context,
            response_schema=input.response_schema,
            priority=input.priority,
            due_in_seconds=input.due_in_seconds,
            idempotency_key=input.idempotency_key,
        )
        return HumanTask.from_model(task)

    @strawberry.mutation(description="Take a lease on a task; claiming again renews it.")
    async def claim_task(self, info: strawberry.Info, input: ClaimTaskInput) -> HumanTask:
        return HumanTask.from_model(await call(info, tasks.claim_task, task_id=input.task_id))

    @strawberry.mutation
    async def release_task(self, info: strawberry.Info, input: ReleaseTaskInput) -> HumanTask:
        task = await call(info, tasks.release_task, task_id=input.task_id, reason=input.reason)
        return HumanTask.from_model(task)

    @strawberry.mutation(
        description="Hand a task you hold (operators: any waiting task) to another reviewer "
        "of its queue, or to their delegate while they are away; they hold it at once."
    )
    async def reassign_task(
        self, info: strawberry.Info, input: ReassignTaskInput
    ) -> ReassignTaskPayload:
        result = await call(
            info,
            delegation.reassign_task,
            task_id=input.task_id,
            assignee_id=input.assignee_id,
            reason=input.reason,
        )
        return ReassignTaskPayload(
            task=HumanTask.from_model(result.task),
            offered_to_id=result.offered_to_id,
            delegated=result.delegated,
        )

    @strawberry.mutation(
        description="Reviewers: while you are away, tasks offered to you go to your delegate."
    )
    async def set_delegate(self, info: strawberry.Info, input: SetDelegateInput) -> Delegation:
        made = await call(
            info,
            delegation.set_delegate,
            delegate_id=input.delegate_id,
            ends_at=input.ends_at,
            starts_at=input.starts_at,
        )
        return Delegation.from_model(made)

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
        created = await call(
            info,
            approval_links.create_approval_link,
            task_id=input.task_id,
            reviewer_id=input.reviewer_id,
            ttl_seconds=input.ttl_seconds,
        )
        return CreateApprovalLinkPayload(
            link=ApprovalLink.from_model(created.link), path=created.path
        )

    @strawberry.mutation(description="Its reviewer, its maker, operators and admins.")
    async def revoke_approval_link(
        self, info: strawberry.Info, input: RevokeApprovalLinkInput
    ) -> ApprovalLink:
        link = await call(info, approval_links.revoke_approval_link, link_id=input.link_id)
        return ApprovalLink.from_model(link)

    @strawberry.mutation(description="Approval tasks take {decision, reason?} and decide.")
    async def complete_task(
        self, info: strawberry.Info, input: CompleteTaskInput
    ) -> CompleteTaskPayload:
        result = await call(
            info,
            tasks.complete_task,
            task_id=input.task_id,
            response=input.response,
            idempotency_key=input.idempotency_key,
        )
        return CompleteTaskPayload(task=HumanTask.from_model(result.task), replayed=result.replayed)

    @strawberry.mutation(description="Integrations: how an accepted (202) action ended.")
    async def report_action_result(
        self, info: strawberry.Info, input: ReportActionResultInput
    ) -> ReportActionResultPayload:
        result = await call(
            info,
            results.report_action_result,
            proposal_id=input.proposal_id,
            operation_key=input.operation_key,
            payload_digest=input.payload_digest,
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

    @strawberry.mutation(description="Operators: deliver a terminally failed proposal again.")
    async def retry_proposal(
        self, info: strawberry.Info, input: RetryProposalInput
    ) -> RetryProposalPayload:
        result = await call(
            info,
            retries.retry_proposal,
            proposal_id=input.proposal_id,
            payload_digest=input.payload_digest,
            idempotency_key=input.idempotency_key,
        )
        return RetryProposalPayload(
            proposal=Proposal.from_model(result.proposal), replayed=result.replayed
        )

    @strawberry.mutation(description="Operators: propose the action that undoes an applied one.")
    async def propose_compensation(
        self, info: strawberry.Info, input: ProposeCompensationInput
    ) -> ProposeActionPayload:
        result = await call(
            info,
            compensations.propose_compensation,
            proposal_id=input.proposal_id,
            target_id=input.target_id,
            action_code=input.action_code,
            payload=input.payload,
            idempotency_key=input.idempotency_key,
            subject=input.subject,
            preconditions=input.preconditions,
        )
        return ProposeActionPayload(
            proposal=Proposal.from_model(result.proposal),
            task=_task(result.task),
            replayed=result.replayed,
        )

    @strawberry.mutation(description="Operators: take an incident up.")
    async def acknowledge_incident(
        self, info: strawberry.Info, input: AcknowledgeIncidentInput
    ) -> IncidentPayload:
        result = await call(
            info,
            incident_response.acknowledge_incident,
            incident_id=input.incident_id,
            idempotency_key=input.idempotency_key,
        )
        return IncidentPayload(
            incident=Incident.from_model(result.incident), replayed=result.replayed
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
        result = await call(
            info,
            incident_response.retry_incident,
            incident_id=input.incident_id,
            idempotency_key=input.idempotency_key,
        )
        return RetryIncidentPayload(
            incident=Incident.from_model(result.incident),
            repair_action=RepairAction.from_model(result.repair_action),
            replayed=result.replayed,
        )

    @strawberry.mutation(description="Operators: close an incident with what was done about it.")
    async def resolve_incident(
        self, info: strawberry.Info, input: ResolveIncidentInput
    ) -> IncidentPayload:
        result = await call(
            info,
            incident_response.resolve_incident,
            incident_id=input.incident_id,
            code=input.code,
            summary=input.summary,
            idempotency_key=input.idempotency_key,
        )
        return IncidentPayload(
            incident=Incident.from_model(result.incident), replayed=result.replayed
        )

    @strawberry.mutation(
        description=(
            "Operators and integrations: raise an incident, one per key (while unresolved, the "
            "same key returns it unchanged)."
        )
    )
    async def open_incident(
        self, info: strawberry.Info, input: OpenIncidentInput
    ) -> OpenIncidentPayload:
        result = await call(
            info,
            incident_response.open_incident,
            key=input.key,
            severity=input.severity,
            category=input.category,
            title=input.title,
            summary=input.summary,
            entity_type=input.entity_type,
            entity_id=input.entity_id,
        )
        return OpenIncidentPayload(
            incident=Incident.from_model(result.incident), deduplicated=result.deduplicated
        )

    @strawberry.mutation(description="Agents: prepare a draft for a person (requestId replays).")
    async def prepare_draft(self, info: strawberry.Info, input: PrepareDraftInput) -> DraftPayload:
        result = await call(
            info,
            drafts.prepare_draft,
            request_id=input.request_id,
            session_id=input.session_id,
            account_id=input.account_id,
            owner=input.owner,
            values=input.values,
        )
        return _draft_payload(result)

    @strawberry.mutation(
        description=(
            "The preparing agent (source AGENT) or the person (USER) edits a draft; an "
            "agent's patch never overwrites a field the person edited."
        )
    )
    async def update_draft(self, info: strawberry.Info, input: UpdateDraftInput) -> DraftPayload:
        result = await call(
            info,
            drafts.update_draft,
            request_id=input.request_id,
            draft_id=input.draft_id,
            session_id=input.session_id,
            expected_revision=input.expected_revision,
            source=input.source,
            patch=input.patch,
            remove=input.remove,
        )
        return _draft_payload(result)

    @strawberry.mutation(description="The person: cancel a draft, or an undispatched reservation.")
    async def cancel_draft(self, info: strawberry.Info, input: CancelDraftInput) -> DraftPayload:
        result = await call(
            info,
            drafts.cancel_draft,
            request_id=input.request_id,
            draft_id=input.draft_id,
            session_id=input.session_id,
            expected_revision=input.expected_revision,
        )
        return _draft_payload(result)

    @strawberry.mutation(
        description="The person: fix the reviewed values; the draft gets its operation key."
    )
    async def reserve_draft(self, info: strawberry.Info, input: ReserveDraftInput) -> DraftPayload:
        result = await call(
            info,
            drafts.reserve_draft,
            request_id=input.request_id,
            draft_id=input.draft_id,
            session_id=input.session_id,
            expected_revision=input.expected_revision,
            values_digest_=input.values_digest,
        )
        return _draft_payload(result)

    @strawberry.mutation(
        description=(
            "Integrations (the executor), once before sending: a reservation passes exactly "
            "once; without draftId it is the ordinary form's check."
        )
    )
    async def check_draft_dispatch(
        self, info: strawberry.Info, input: CheckDraftDispatchInput
    ) -> DraftDispatchCheck:
        result = await call(
            info,
            drafts.check_draft_dispatch,
            owner=input.owner,
            draft_id=input.draft_id,
            operation_key=input.operation_key,
            values_digest_=input.values_digest,
        )
        return DraftDispatchCheck(allowed=result.allowed, managed=result.managed)

    @strawberry.mutation(description="Integrations: what became of a reservation.")
    async def observe_draft(self, info: strawberry.Info, input: ObserveDraftInput) -> DraftPayload:
        result = await call(
            info,
            drafts.observe_draft,
            request_id=input.request_id,
            draft_id=input.draft_id,
            session_id=input.session_id,
            expected_revision=input.expected_revision,
            operation_key=input.operation_key,
            outcome=input.outcome,
            receipt=input.receipt,
            owner_execution_ref=input.owner_execution_ref,
        )
        return _draft_payload(result)
