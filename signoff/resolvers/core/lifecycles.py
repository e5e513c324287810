"""The transition tables: every state change a proposal, its delivery, a task or an
incident can make, with the change event and the audit action each one writes. Targets'
and actors' tables are in ``target_lifecycle`` and ``actor_lifecycle``, notification
channels' and delegations' in ``reach_lifecycles``.

``docs/design.md`` sections 4.5, 4.6, 5.2 and 6.2 show the same tables;
``tests/resolvers/test_lifecycles.py`` checks that they agree with each other and that
every reachable proposal state, ``APPLYING`` included, produces a change event.
"""

from __future__ import annotations

from typing import Any

from signoff.models import (
    ApprovalLink,
    ApprovalLinkState,
    ChangeKind,
    DeadLetter,
    DeadLetterState,
    Draft,
    DraftStatus,
    HumanTask,
    Incident,
    IncidentState,
    Notification,
    NotificationState,
    Proposal,
    ProposalState,
    ReconciliationRun,
    ReconciliationState,
    TaskState,
)
from signoff.resolvers.core.message_updates import keep_messages_true
from signoff.resolvers.core.transitions import Edge, Lifecycle, Outcome, Subject
from signoff.resolvers.core.work import UnitOfWork

P = ProposalState
T = TaskState
ProposalEdge = Edge[ProposalState]

# --- proposals: approval -----------------------------------------------------------

COUNT_APPROVAL = Edge(
    "count_approval",
    frozenset({P.APPROVAL_REQUIRED}),
    {
        # Short of the quorum: still waiting, one approval more.
        P.APPROVAL_REQUIRED: Outcome(ChangeKind.PROPOSAL_APPROVAL_ADDED, None),
        # The quorum's last approval: straight to the delivery outbox; APPROVED stands
        # only on a target its agent executes, until the agent takes the right (EXECUTE).
        P.QUEUED: Outcome(ChangeKind.PROPOSAL_APPROVED, "proposal.approved"),
        P.APPROVED: Outcome(ChangeKind.PROPOSAL_APPROVED, "proposal.approved"),
    },
)
REJECT = Edge.of(
    "reject", [P.APPROVAL_REQUIRED], P.REJECTED, ChangeKind.PROPOSAL_REJECTED, "proposal.rejected"
)
EXPIRE = Edge.of(
    "expire", [P.APPROVAL_REQUIRED], P.CANCELLED, ChangeKind.PROPOSAL_EXPIRED, "proposal.expired"
)
# Deadline policies (docs/design.md section 4.20): never an approval.
REJECT_AT_DEADLINE = Edge.of(
    "reject_at_deadline",
    [P.APPROVAL_REQUIRED],
    P.REJECTED,
    ChangeKind.PROPOSAL_REJECTED,
    "proposal.deadline_rejected",
)
ESCALATE = Edge.of(
    "escalate",
    [P.APPROVAL_REQUIRED],
    P.APPROVAL_REQUIRED,
    ChangeKind.PROPOSAL_ESCALATED,
    "proposal.escalated",
)
# A reviewer amends the payload: a new revision and digest, earlier approvals void.
AMEND = Edge.of(
    "amend",
    [P.APPROVAL_REQUIRED],
    P.APPROVAL_REQUIRED,
    ChangeKind.PROPOSAL_AMENDED,
    "proposal.amended",
)
# The proposing agent accepts an amendment; with the quorum already in, that queues it.
ACCEPT_AMENDMENT = Edge(
    "accept_amendment",
    frozenset({P.APPROVAL_REQUIRED}),
    {
        P.APPROVAL_REQUIRED: Outcome(
            ChangeKind.PROPOSAL_AMENDMENT_ACCEPTED, "proposal.amendment_accepted"
        ),
        P.QUEUED: Outcome(ChangeKind.PROPOSAL_APPROVED, "proposal.approved"),
        P.APPROVED: Outcome(ChangeKind.PROPOSAL_APPROVED, "proposal.approved"),
    },
)
# Actors were linked into one person (``signoff actor link``): the approvals of the
# current revision count that person once.
RECOUNT = Edge.of(
    "recount",
    [P.APPROVAL_REQUIRED],
    P.APPROVAL_REQUIRED,
    ChangeKind.PROPOSAL_APPROVAL_ADDED,
    "proposal.approvals_recounted",
)
REQUIRE_COMPENSATION = Edge.of(
    "require_compensation",
    [P.APPLIED, P.COMPENSATION_REQUIRED],
    P.COMPENSATION_REQUIRED,
    ChangeKind.PROPOSAL_COMPENSATION_REQUIRED,
    "proposal.compensation_required",
)

# --- proposals: delivery -----------------------------------------------------------

PENDING = frozenset({P.QUEUED, P.FAILED})  # waiting for an attempt (FAILED: a retry is due)
IN_FLIGHT = frozenset({P.APPLYING})
OPEN_DELIVERY = PENDING | IN_FLIGHT

START_ATTEMPT = Edge.of(
    "start_attempt",
    OPEN_DELIVERY,  # APPLYING: only when the previous holder's lease lapsed (the guard)
    P.APPLYING,
    ChangeKind.PROPOSAL_DELIVERY_STARTED,
    "proposal.delivery_started",
)
RENEW_LEASE = Edge.of("renew_lease", IN_FLIGHT, P.APPLYING, None, None)
ACCEPT = Edge.of("accept", IN_FLIGHT, P.APPLYING, ChangeKind.PROPOSAL_ACCEPTED, "proposal.accepted")
APPLY = Edge.of("apply", OPEN_DELIVERY, P.APPLIED, ChangeKind.PROPOSAL_APPLIED, "proposal.applied")
RETRY_LATER = Edge.of(
    "retry_later",
    OPEN_DELIVERY,
    P.FAILED,
    ChangeKind.PROPOSAL_FAILED,
    "proposal.retry_scheduled",
)
FAIL = Edge.of(
    "fail", OPEN_DELIVERY, P.FAILED, ChangeKind.PROPOSAL_FAILED, "proposal.delivery_failed"
)
REFUSE = Edge.of(
    "refuse", IN_FLIGHT, P.FAILED, ChangeKind.PROPOSAL_FAILED, "proposal.delivery_refused"
)
REQUEUE = Edge.of("requeue", [P.FAILED], P.QUEUED, ChangeKind.PROPOSAL_REQUEUED, "proposal.retried")
# Reconciliation: a lease that lapsed (its worker died) goes back to pending, due now. The
# lease generation is kept: it is the fencing token (docs/design.md sections 4.6, 6.4).
RELEASE_LEASE = Edge.of(
    "release_lease",
    IN_FLIGHT,
    P.QUEUED,
    ChangeKind.PROPOSAL_LEASE_RELEASED,
    "proposal.lease_released",
)

# --- proposals: executed by their agent (docs/design.md section 4.21) -------------------

# The agent takes the one execution right: one winner, with a lease.
BEGIN_EXECUTION = Edge.of(
    "begin_execution",
    [P.APPROVED],
    P.EXECUTING,
    ChangeKind.PROPOSAL_EXECUTION_STARTED,
    "proposal.execution_started",
)
# The holder reports how it went; a late report (after the lease lapsed) still tells.
REPORT_EXECUTION = Edge(
    "report_execution",
    frozenset({P.EXECUTING, P.EXECUTION_UNKNOWN}),
    {
        P.APPLIED: Outcome(ChangeKind.PROPOSAL_APPLIED, "proposal.applied"),
        P.FAILED: Outcome(ChangeKind.PROPOSAL_FAILED, "proposal.execution_failed"),
    },
)
# The lease lapsed without a report: Signoff cannot know whether it ran; never retried.
LAPSE_EXECUTION = Edge.of(
    "lapse_execution",
    [P.EXECUTING],
    P.EXECUTION_UNKNOWN,
    ChangeKind.PROPOSAL_EXECUTION_UNKNOWN,
    "proposal.execution_unknown",
)


async def describe_proposal(_: UnitOfWork, proposal: Proposal) -> Subject:
    return Subject(
        queue_id=proposal.queue_id,
        proposal_id=proposal.id,
        snapshot={
            "state": str(proposal.state),
            "actionCode": proposal.action_code,
            "approvalCount": proposal.approval_count,
            "revision": proposal.revision,
            "proposedById": proposal.proposed_by_id,
            "deliveryAttemptCount": proposal.delivery_attempt_count,
            "lastErrorCode": proposal.last_error_code,
            "deliveryTerminal": proposal.delivery_terminal,
            "escalationLevel": proposal.escalation_level,
        },
    )


def follow_proposal(work: UnitOfWork, proposal: Proposal) -> None:
    """After every move: the delivery it makes due, and the Slack messages that show it."""
    schedule_if_due(work, proposal)
    keep_messages_true(work, proposal)


def schedule_if_due(work: UnitOfWork, proposal: Proposal) -> None:
    """A proposal waiting for an attempt gets its job after commit (the sweep is the net)."""
    if (
        proposal.state in PENDING
        and not proposal.delivery_terminal
        and proposal.next_attempt_at is not None
    ):
        at = proposal.next_attempt_at if proposal.next_attempt_at > work.now() else None
        work.schedule_delivery(proposal.id, proposal.delivery_attempt_count + 1, at)


PROPOSAL: Lifecycle[Proposal, ProposalState] = Lifecycle(
    "proposal",
    Proposal,
    [
        COUNT_APPROVAL,
        REJECT,
        EXPIRE,
        AMEND,
        ACCEPT_AMENDMENT,
        REJECT_AT_DEADLINE,
        ESCALATE,
        RECOUNT,
        REQUIRE_COMPENSATION,
        START_ATTEMPT,
        RENEW_LEASE,
        ACCEPT,
        APPLY,
        RETRY_LATER,
        FAIL,
        REFUSE,
        REQUEUE,
        RELEASE_LEASE,
        BEGIN_EXECUTION,
        REPORT_EXECUTION,
        LAPSE_EXECUTION,
    ],
    describe=describe_proposal,
    follow_up=follow_proposal,
)

# --- human tasks -------------------------------------------------------------------

CLAIM = Edge.of("claim", [T.OPEN, T.CLAIMED], T.CLAIMED, ChangeKind.TASK_CLAIMED, "task.claimed")
RELEASE = Edge.of("release", [T.CLAIMED], T.OPEN, ChangeKind.TASK_RELEASED, "task.released")
COMPLETE = Edge.of(
    "complete", [T.OPEN, T.CLAIMED], T.COMPLETED, ChangeKind.TASK_COMPLETED, "task.completed"
)
# An approval task after a decision that did not reach the quorum: open for the next reviewer.
REOPEN = Edge.of("reopen", [T.OPEN, T.CLAIMED], T.OPEN, ChangeKind.TASK_REOPENED, "task.reopened")
EXPIRE_TASK = Edge.of("expire_task", [T.OPEN, T.CLAIMED], T.EXPIRED, ChangeKind.TASK_EXPIRED, None)
# Its proposal escalated: the task moves to the next queue, open, unclaimed.
ESCALATE_TASK = Edge.of(
    "escalate_task", [T.OPEN, T.CLAIMED], T.OPEN, ChangeKind.TASK_ESCALATED, "task.escalated"
)
# Handing a task to another reviewer of its queue (docs/design.md section 5.5): claimed by
# them at once; DELEGATE when it went to the delegate of the one it was offered to.
REASSIGN = Edge.of(
    "reassign", [T.OPEN, T.CLAIMED], T.CLAIMED, ChangeKind.TASK_REASSIGNED, "task.reassigned"
)
DELEGATE = Edge.of(
    "delegate", [T.OPEN, T.CLAIMED], T.CLAIMED, ChangeKind.TASK_REASSIGNED, "task.delegated"
)
# A reminder from the task's queue: the task stays as it is (docs/design.md section 5.4).
REMIND = Edge(
    "remind",
    frozenset({T.OPEN, T.CLAIMED}),
    {state: Outcome(ChangeKind.TASK_DUE_SOON, "task.due_soon") for state in (T.OPEN, T.CLAIMED)},
)
# Reconciliation writes back what reads already derive: a lapsed claim leaves the task open.
LAPSE_CLAIM = Edge.of(
    "lapse_claim", [T.CLAIMED], T.OPEN, ChangeKind.TASK_CLAIM_LAPSED, "task.claim_lapsed"
)


async def describe_task(work: UnitOfWork, task: HumanTask) -> Subject:
    """Approval tasks carry their proposer, so the agent that proposed may follow them."""
    snapshot: dict[str, Any] = {
        "state": str(task.state),
        "kind": task.kind,
        "assigneeId": task.assignee_id,
    }
    if task.proposal_id is not None:
        # A decision has just moved the proposal as a record (its proposer never changes).
        proposal = work.moved_records.get((Proposal, task.proposal_id))
        if proposal is None:
            proposal = await work.session.get(Proposal, task.proposal_id)
        if proposal is not None:
            snapshot["proposedById"] = proposal.proposed_by_id
    return Subject(queue_id=task.queue_id, proposal_id=task.proposal_id, snapshot=snapshot)


TASK: Lifecycle[HumanTask, TaskState] = Lifecycle(
    "task",
    HumanTask,
    [
        CLAIM,
        RELEASE,
        COMPLETE,
        REOPEN,
        EXPIRE_TASK,
        ESCALATE_TASK,
        REASSIGN,
        DELEGATE,
        REMIND,
        LAPSE_CLAIM,
    ],
    describe=describe_task,
)

# --- incidents ---------------------------------------------------------------------

# An incident is opened, and re-opened by each recurrence, by one upsert per fingerprint
# (``signoff.resolvers.core.occurrences``), not by a compare-and-set; operators move it on.
I = IncidentState  # noqa: E741 - the table reads better with one-letter state names

ACKNOWLEDGE = Edge.of(
    "acknowledge",
    [I.OPEN],
    I.ACKNOWLEDGED,
    ChangeKind.INCIDENT_ACKNOWLEDGED,
    "incident.acknowledged",
)
# Retrying its work takes the incident up, as acknowledging does.
RETRY = Edge.of(
    "retry",
    [I.OPEN, I.ACKNOWLEDGED],
    I.ACKNOWLEDGED,
    ChangeKind.INCIDENT_RETRIED,
    "incident.retried",
)
RESOLVE = Edge.of(
    "resolve",
    [I.OPEN, I.ACKNOWLEDGED],
    I.RESOLVED,
    ChangeKind.INCIDENT_RESOLVED,
    "incident.resolved",
)


async def describe_incident(_: UnitOfWork, incident: Incident) -> Subject:
    return Subject(
        queue_id=None,
        proposal_id=None,
        snapshot={
            "state": str(incident.state),
            "title": incident.title,
            "fingerprint": incident.fingerprint,
            "occurrenceCount": incident.occurrence_count,
            "lastErrorCode": incident.last_error_code,
            "entityType": incident.entity_type,
            "entityId": incident.entity_id,
        },
    )


# --- drafts ------------------------------------------------------------------------
D = DraftStatus
UNSENT = [D.DRAFT, D.RESERVED]  # RESERVED only while its dispatch check has not passed (guard)
REPORTED = [D.OBSERVED, D.PARTIAL, D.OUTCOME_UNKNOWN]

EDIT_DRAFT = Edge.of("edit", [D.DRAFT], D.DRAFT, ChangeKind.DRAFT_UPDATED, "draft.updated")
RESERVE_DRAFT = Edge.of(
    "reserve", [D.DRAFT], D.RESERVED, ChangeKind.DRAFT_RESERVED, "draft.reserved"
)
CANCEL_DRAFT = Edge.of("cancel", UNSENT, D.CANCELLED, ChangeKind.DRAFT_CANCELLED, "draft.cancelled")
SUPERSEDE_DRAFT = Edge.of(
    "supersede", UNSENT, D.CANCELLED, ChangeKind.DRAFT_CANCELLED, "draft.superseded"
)
# The executor's one dispatch check: the reservation is consumed, the status stays.
DISPATCH_DRAFT = Edge.of(
    "dispatch", [D.RESERVED], D.RESERVED, ChangeKind.DRAFT_DISPATCHED, "draft.dispatched"
)
OBSERVE_DRAFT = Edge(
    "observe",
    frozenset({D.RESERVED, D.PARTIAL, D.OUTCOME_UNKNOWN}),
    {state: Outcome(ChangeKind.DRAFT_OBSERVED, "draft.observed") for state in REPORTED},
)
# NOT_SUBMITTED: refused before anything was sent; the owner is free again.
RELEASE_DRAFT = Edge.of(
    "release", [D.RESERVED], D.CANCELLED, ChangeKind.DRAFT_CANCELLED, "draft.released"
)
# Retention drops a draft's values and keeps its tombstones; the status does not change.
DROP_DRAFT_VALUES = Edge("drop_values", frozenset(D), {state: Outcome(None, None) for state in D})


async def describe_draft(_: UnitOfWork, draft: Draft) -> Subject:
    return Subject(
        queue_id=None,
        proposal_id=None,
        session_key=draft_session_key(draft.account_id, draft.session_id),
        snapshot={
            "status": str(draft.status),
            "revision": draft.revision,
            "ownerKind": str(draft.owner_kind),
            "sessionId": draft.session_id,
        },
    )


def draft_session_key(account_id: str, session_id: str) -> str:
    """What ``draftEvents(sessionId)`` follows: one account's drafts of one session."""
    return f"{account_id}:{session_id}"


DRAFT: Lifecycle[Draft, DraftStatus] = Lifecycle(
    "draft",
    Draft,
    [
        EDIT_DRAFT,
        RESERVE_DRAFT,
        CANCEL_DRAFT,
        SUPERSEDE_DRAFT,
        DISPATCH_DRAFT,
        OBSERVE_DRAFT,
        RELEASE_DRAFT,
        DROP_DRAFT_VALUES,
    ],
    describe=describe_draft,
    state_field="status",
)

# --- dead letters ------------------------------------------------------------------
# They follow their incident; the incident's events and audit records tell the story.
L = DeadLetterState

TAKE_UP_LETTER = Edge.of("take_up", [L.OPEN], L.ACKNOWLEDGED, None, None)
SETTLE_LETTER = Edge.of("settle", [L.OPEN, L.ACKNOWLEDGED], L.RESOLVED, None, None)


async def describe_dead_letter(_: UnitOfWork, letter: DeadLetter) -> Subject:
    return Subject(queue_id=None, proposal_id=letter.proposal_id, snapshot={})


DEAD_LETTER: Lifecycle[DeadLetter, DeadLetterState] = Lifecycle(
    "dead_letter", DeadLetter, [TAKE_UP_LETTER, SETTLE_LETTER], describe=describe_dead_letter
)

INCIDENT: Lifecycle[Incident, IncidentState] = Lifecycle(
    "incident", Incident, [ACKNOWLEDGE, RETRY, RESOLVE], describe=describe_incident
)

# --- notifications -----------------------------------------------------------------
# Outbox rows of a queue's notification channels (docs/design.md section 5.6); the task's
# own events are the feed's story, so a notification writes no change event.
N = NotificationState

START_SENDING = Edge.of("start_sending", [N.PENDING, N.SENDING], N.SENDING, None, None)
MARK_SENT = Edge.of("mark_sent", [N.SENDING], N.SENT, None, "notification.sent")
SEND_LATER = Edge.of("send_later", [N.SENDING], N.PENDING, None, "notification.retry_scheduled")
GIVE_UP_SENDING = Edge.of("give_up", [N.SENDING], N.FAILED, None, "notification.failed")
# Its channel was disabled or removed: never sent. SENDING only when the claim that finds
# the channel off holds it, or its sender died (the guards).
CANCEL_SENDING = Edge.of(
    "cancel_sending", [N.PENDING, N.SENDING], N.CANCELLED, None, "notification.cancelled"
)


async def describe_notification(_: UnitOfWork, notification: Notification) -> Subject:
    return Subject(queue_id=notification.queue_id, proposal_id=None, snapshot={})


NOTIFICATION: Lifecycle[Notification, NotificationState] = Lifecycle(
    "notification",
    Notification,
    [START_SENDING, MARK_SENT, SEND_LATER, GIVE_UP_SENDING, CANCEL_SENDING],
    describe=describe_notification,
)

# --- approval links ----------------------------------------------------------------
# A link decides once (docs/design.md section 5.7); the decision's own transitions are the
# feed's story, so the link writes audit records only.
K = ApprovalLinkState

USE_LINK = Edge.of("use_link", [K.ACTIVE], K.USED, None, "approval_link.used")
REVOKE_LINK = Edge.of("revoke_link", [K.ACTIVE], K.REVOKED, None, "approval_link.revoked")


async def describe_link(_: UnitOfWork, link: ApprovalLink) -> Subject:
    return Subject(queue_id=None, proposal_id=link.proposal_id, snapshot={})


APPROVAL_LINK: Lifecycle[ApprovalLink, ApprovalLinkState] = Lifecycle(
    "approval_link", ApprovalLink, [USE_LINK, REVOKE_LINK], describe=describe_link
)

# --- reconciliation runs -----------------------------------------------------------

# A run is inserted RUNNING and finished once; the run row itself is the record, so
# finishing writes neither an audit entry nor a change event.
R = ReconciliationState

FINISH_RUN = Edge(
    "finish_run",
    frozenset({R.RUNNING}),
    {state: Outcome(None, None) for state in (R.SUCCEEDED, R.PARTIAL, R.FAILED)},
)


async def describe_run(_: UnitOfWork, run: ReconciliationRun) -> Subject:
    return Subject(queue_id=None, proposal_id=None, snapshot={"state": str(run.state)})


RECONCILIATION: Lifecycle[ReconciliationRun, ReconciliationState] = Lifecycle(
    "reconciliation_run", ReconciliationRun, [FINISH_RUN], describe=describe_run
)
