// The GraphQL documents the console sends: one place that knows the API's shape.

// The first screen's documents are start.js's, which sends them before any module runs.
export const { TASK_FIELDS, LOAD_VIEWER, LOAD_TASKS } = window.signoffStart.documents;

export const LOAD_ALL_QUEUES = `query Queues { queues { id slug name } }`;

export const MORE_TASKS = `query MoreTasks($state: TaskState!, $after: String!) {
  tasks(state: $state, first: 100, after: $after) { nodes { ${TASK_FIELDS} } pageInfo { hasNextPage endCursor } }
}`;

export const QUEUE_EVENTS = `subscription Live($after: String) {
  queueEvents(after: $after) {
    cursor kind entityType entityId entityVersion queueId proposalId snapshot
    task { ${TASK_FIELDS} }
  }
}`;

export const LOAD_TASK = `query Task($id: ID!) {
  task(id: $id) {
    ${TASK_FIELDS}
    context response completedAt
    completedBy { name }
    proposal {
      id state actionCode subject payload preconditions payloadDigest operationKey
      requiredApprovals approvalCount expiresAt createdAt deliveryAttemptCount
      deliveryTerminal nextAttemptAt lastErrorCode appliedAt
      agentExecutes executor executionStartedAt executedBy { name } result
      target { name url method }
      proposedBy { name }
      revision
      approvals { id decision reason createdAt payloadDigest revision approver { name } }
      viewerStanding {
        decision decidedAs mayApprove mayReject
        approveRefusal { code message }
        rejectRefusal { code message }
      }
      attempts { id attemptNumber responseClass statusCode errorCode durationMs startedAt }
    }
  }
}`;

const DECISION_TIMES = "count p50Seconds p90Seconds p99Seconds";

export const LOAD_OPERATIONS = `query Operations {
  changeFeedCursor
  operationsSnapshot {
    generatedAt
    proposalsByState { state count }
    openIncidents { severity count }
    humanTasks { pending inFlight retrying }
  }
  incidents(first: 20) {
    nodes {
      id title severity state occurrenceCount lastSeenAt resolutionCode
      proposal { id state deliveryTerminal }
    }
  }
}`;

// The last day's figures read a day of proposals: loaded less often than the counts.
export const LOAD_STATISTICS = `query Statistics {
  operationsStatistics {
    since until
    hours { start decided applied openIncidents timeToDecision { ${DECISION_TIMES} } }
    timeToDecision { ${DECISION_TIMES} }
  }
}`;

export const LOAD_INCIDENT = `query Incident($id: ID!) {
  changeFeedCursor
  incident(id: $id) {
    id title severity state category summary occurrenceCount lastErrorCode
    firstSeenAt lastSeenAt acknowledgedAt resolvedAt resolutionCode resolutionSummary
    proposal {
      id state actionCode subject lastErrorCode deliveryTerminal deliveryAttemptCount
      createdAt decidedAt appliedAt agentExecutes task { id }
    }
    target { id name circuitState consecutiveFailures lastError pausedAt retiredAt }
    auditTrail { id action targetType createdAt details actor { name } }
  }
}`;

// Incidents opened, recurring, acknowledged, retried, resolved (operators and admins).
export const INCIDENT_EVENTS = `subscription Incidents($after: String) {
  incidentEvents(after: $after) { cursor kind entityType entityId entityVersion }
}`;

export const CLAIM = `mutation Claim($id: ID!) { claimTask(input: { taskId: $id }) { id state } }`;
export const RELEASE = `mutation Release($id: ID!) { releaseTask(input: { taskId: $id }) { id state } }`;
export const DECIDE = `mutation Decide($input: DecideProposalInput!) {
  decideProposal(input: $input) { proposal { id state approvalCount } }
}`;
export const AMEND = `mutation Amend($input: AmendProposalInput!) {
  amendProposal(input: $input) { proposal { id payloadDigest revision } }
}`;
export const DECIDE_MANY = `mutation DecideMany($input: DecideProposalsInput!) {
  decideProposals(input: $input) { results { proposalId code message } }
}`;
export const COMPLETE = `mutation Complete($input: CompleteTaskInput!) {
  completeTask(input: $input) { task { id state } }
}`;
export const ACKNOWLEDGE_INCIDENT = `mutation AcknowledgeIncident($input: AcknowledgeIncidentInput!) {
  acknowledgeIncident(input: $input) { incident { id state } }
}`;
export const RETRY_INCIDENT = `mutation RetryIncident($input: RetryIncidentInput!) {
  retryIncident(input: $input) { incident { id state } }
}`;
export const RESOLVE_INCIDENT = `mutation ResolveIncident($input: ResolveIncidentInput!) {
  resolveIncident(input: $input) { incident { id state } }
}`;

// History (views/history.js): decided proposals, most recently decided first, one page.
export const HISTORY_ROW = `
  id state actionCode subject decidedAt createdAt
  target { id name }
  proposedBy { id name }
  approvals { id decision approver { id name } }
`;

export const LOAD_HISTORY = `query History(
  $states: [ProposalState!], $targetId: ID, $proposedById: ID, $reviewerId: ID,
  $decidedAfter: DateTime, $decidedBefore: DateTime, $search: String, $after: String
) {
  history(
    states: $states, targetId: $targetId, proposedById: $proposedById, reviewerId: $reviewerId,
    decidedAfter: $decidedAfter, decidedBefore: $decidedBefore, search: $search,
    first: 50, after: $after
  ) {
    pageInfo { hasNextPage endCursor }
    nodes { ${HISTORY_ROW} }
  }
}`;

export const LOAD_TARGETS = `query Targets { targets { id name } }`;

// The agents and reviewers the filters offer (operators and admins may list actors).
export const LOAD_ACTORS = `query Actors {
  agents: actors(role: AGENT, first: 100) { nodes { id name } }
  reviewers: actors(role: REVIEWER, first: 100) { nodes { id name } }
}`;

// One proposal's story (views/proposal.js): what it is, its timeline, its receipt.
export const LOAD_PROPOSAL = `query Proposal($id: ID!) {
  proposal(id: $id) {
    id state actionCode subject payload payloadDigest revision requiredApprovals
    approvalCount createdAt decidedAt appliedAt expiresAt
    target { id name }
    proposedBy { name }
    task { id }
    timeline {
      auditEventId kind action at revision payloadDigest fromDigest decision reason
      errorCode logPosition
      actor { name }
      policyRule { rule name approvals queue { name } }
      diff { op path value from }
      attempt { attemptNumber responseClass statusCode errorCode durationMs }
      incident { id title state }
    }
    decisionReceipt
  }
}`;
