// The GraphQL documents of the Admin screens: the same reads and mutations the API offers
// (schema.graphql), nothing of the console's own.

export const ADMIN_QUEUES = `query AdminQueues {
  queues { id slug name members { id name } }
  reviewers: actors(role: REVIEWER, first: 100) { nodes { id name } }
}`;
export const CREATE_QUEUE = `mutation CreateQueue($input: CreateQueueInput!) {
  createQueue(input: $input) { id }
}`;
export const ADD_MEMBER = `mutation AddMember($input: QueueMemberInput!) {
  addQueueMember(input: $input) { id }
}`;
export const REMOVE_MEMBER = `mutation RemoveMember($input: QueueMemberInput!) {
  removeQueueMember(input: $input) { id }
}`;

export const ADMIN_TARGETS = `query AdminTargets {
  targets {
    id name url active retiredAt pausedAt maxConcurrency ratePerSecond circuitState
    consecutiveFailures lastError nextProbeAt queue { name }
  }
}`;
export const PAUSE_TARGET = `mutation PauseTarget($input: PauseTargetInput!) {
  pauseTarget(input: $input) { target { id pausedAt } }
}`;
export const RESUME_TARGET = `mutation ResumeTarget($input: ResumeTargetInput!) {
  resumeTarget(input: $input) { target { id pausedAt } }
}`;
export const SET_TARGET_LIMITS = `mutation SetTargetLimits($input: SetTargetLimitsInput!) {
  setTargetLimits(input: $input) { target { id maxConcurrency ratePerSecond } }
}`;
export const CLOSE_TARGET_CIRCUIT = `mutation CloseTargetCircuit($input: CloseTargetCircuitInput!) {
  closeTargetCircuit(input: $input) { target { id circuitState } }
}`;
export const RETIRE_TARGET = `mutation RetireTarget($input: RetireTargetInput!) {
  retireTarget(input: $input) { id retiredAt }
}`;

export const ADMIN_TOKENS = `query AdminTokens {
  tokens { id createdAt actor { id name role } }
  queues { id slug name }
}`;
export const CREATE_TOKEN = `mutation CreateToken($input: CreateTokenInput!) {
  createToken(input: $input) { token apiToken { id actor { name role } } }
}`;
export const REVOKE_TOKEN = `mutation RevokeToken($input: RevokeTokenInput!) {
  revokeToken(input: $input) { id revokedAt }
}`;

export const ADMIN_CHANNELS = `query AdminChannels {
  queues {
    id slug name
    members { id name role }
    notificationChannels { id kind url disabled disabledAt createdAt }
  }
}`;
export const ADD_CHANNEL = `mutation AddChannel($input: AddNotificationChannelInput!) {
  addNotificationChannel(input: $input) { signingSecret channel { id } }
}`;
export const DISABLE_CHANNEL = `mutation DisableChannel($input: DisableNotificationChannelInput!) {
  disableNotificationChannel(input: $input) { id disabled }
}`;
export const ENABLE_CHANNEL = `mutation EnableChannel($input: EnableNotificationChannelInput!) {
  enableNotificationChannel(input: $input) { id disabled }
}`;
export const REMOVE_CHANNEL = `mutation RemoveChannel($input: RemoveNotificationChannelInput!) {
  removeNotificationChannel(input: $input) { id removedAt }
}`;

export const ADMIN_DELEGATIONS = `query AdminDelegations {
  delegations { id startsAt endsAt actor { name } delegate { name } }
}`;

export const ADMIN_CLAIM_MAPPING = `query AdminClaimMapping {
  claimMapping { groupsClaim nameClaims groups { group role queues missingQueues line } }
}`;
