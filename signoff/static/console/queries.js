// The GraphQL documents the console sends: one place that knows the API's shape.

export const TASK_FIELDS = `
  id kind title priority dueAt state claimExpiresAt claimedByMe createdAt
  assignee { name }
  queue { id slug name }
  proposal {
    id state actionCode approvalCount requiredApprovals payloadDigest
    subject payload createdAt proposedBy { name } target { id name summaryField }
  }
`;

export const LOAD_VIEWER = `query Viewer {
  viewer { actor { id name role } queues { id slug name } }
}`;

export const LOAD_ALL_QUEUES = `query Queues { queues { id slug name } }`;

// The first page of each list, a screenful (drawn as soon as it comes); MORE_TASKS reads
// the rest, 100 at a time.
export const LOAD_TASKS = `query Tasks {
  changeFeedCursor
  open: tasks(state: OPEN, first: 50) { nodes { ${TASK_FIELDS} } pageInfo { hasNextPage endCursor } }
  claimed: tasks(state: CLAIMED, first: 50) { nodes { ${TASK_FIELDS} } pageInfo { hasNextPage endCursor } }
}`;

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

export const LOAD_OPERATIONS = `query Operations {
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
