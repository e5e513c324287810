// What the console tells a person for each refusal code the API can return
// (signoff/errors.py, plus the transport's own). tests/test_console.py checks that every
// code the server defines has a message here.

export const MESSAGES = {
  BAD_REQUEST: "The server could not accept that request.",
  UNAUTHENTICATED: "That token is not valid (or was revoked). Sign in again with a current token.",
  FORBIDDEN: "Your role or queues do not allow this.",
  SLACK_USER_UNKNOWN: "That Slack account is not linked to a Signoff reviewer; an admin can link it with signoff actor link-slack.",
  SLACK_USER_AMBIGUOUS:
    "That Slack account's email is that of more than one Signoff account; an admin can link it with signoff actor link-slack.",
  IDENTITY_TOKEN_REFUSED: "The identity provider's token is not valid here. Sign in again.",
  NO_MAPPED_GROUP:
    "Your groups at the identity provider give you no role in Signoff. Ask to be added to a reviewers' group.",
  IDENTITY_PROVIDER_UNAVAILABLE: "The identity provider cannot be reached right now. Try again shortly.",
  SIGN_IN_REFUSED: "The sign-in could not be finished. Start it again.",
  CSRF_REFUSED: "This page's session check failed. Reload the console.",
  NOT_FOUND: "It no longer exists, or the link is wrong.",
  AUDIT_PROOF_UNAVAILABLE:
    "No audit proof for that yet: the log has no signed checkpoint covering it. Try again after the next checkpoint.",
  AUDIT_KEY_MISMATCH: "This server's audit signing key is not the one its database was signed with. Tell an operator.",
  VALIDATION_FAILED: "Some of what was sent is not valid; check the fields and try again.",
  DESTINATION_REFUSED:
    "Signoff does not deliver to that URL: its address is not public (or is reserved), or it carries a password. An operator may allow private networks.",
  SCHEMA_INVALID: "The JSON Schema given is not valid.",
  PAYLOAD_SCHEMA_INVALID: "The payload does not meet the target's input schema.",
  RESPONSE_INVALID: "Your response does not meet the task's response schema.",
  IDEMPOTENCY_KEY_REUSED: "This request's key was already used for a different request.",
  TRANSITION_NOT_ALLOWED: "That change is not possible in the current state. Reload to see it.",
  TARGET_UNAVAILABLE: "The target is retired and takes no new proposals.",
  TARGET_ALREADY_PAUSED: "The target is already paused.",
  TARGET_NOT_PAUSED: "The target is not paused.",
  TARGET_CIRCUIT_NOT_OPEN: "The target's circuit is not open.",
  PAYLOAD_DIGEST_MISMATCH:
    "The proposal is not the one you reviewed (its digest differs). Reload and review it again.",
  NOT_AWAITING_APPROVAL:
    "This proposal is no longer waiting for a decision: it was decided, or it expired.",
  SELF_APPROVAL_FORBIDDEN: "You proposed this action, so you cannot decide it.",
  AMENDER_APPROVAL_FORBIDDEN: "You amended this proposal, so another person must approve what you wrote.",
  ALREADY_DECIDED: "You have already decided this proposal, under this or another of your accounts.",
  TASK_NOT_CLAIMABLE: "This task is finished (completed, expired or cancelled).",
  TASK_CLAIMED_BY_OTHER: "Another reviewer holds this task. Wait for them to release it.",
  TASK_NOT_CLAIMED: "You do not hold a claim on this task.",
  ALREADY_EXISTS: "Something with that name already exists.",
  ROLE_CONFLICT: "That actor already has another role; nothing was changed. An existing actor keeps its role (signoff actor set-role changes it).",
  RESULT_IDENTITY_MISMATCH: "The result names a different operation or digest.",
  RESULT_TERMINAL: "A final result was already recorded.",
  EXECUTION_CONSUMED: "This approval was already used: its agent has taken (or finished) its one execution.",
  NOT_EXECUTABLE: "This proposal cannot be executed by its agent now (not approved, past its deadline, or delivered by Signoff).",
  EXECUTION_NOT_HELD: "That execution is not held by you: report with the lease beginExecution gave.",
  RESULT_SCHEMA_INVALID: "The reported result does not match the target's output schema.",
  RESULT_NOT_EXPECTED: "No result is expected in this state.",
  NOT_RETRYABLE: "Only a proposal whose delivery has given up can be retried.",
  RETRY_DIGEST_MISMATCH: "The proposal's digest differs from the one named. Reload it.",
  COMPENSATION_UNAVAILABLE: "This proposal cannot be compensated.",
  INCIDENT_RESOLVED: "The incident is already resolved.",
  NOT_REPAIRABLE: "This incident cannot be repaired that way.",
  RESOLUTION_INVALID: "The resolution code or summary is not valid.",
  REQUEST_CONFLICT: "That request id was already used with other values.",
  STALE_REVISION: "Someone changed it meanwhile. Reload and try again.",
  NOT_EDITABLE: "It can no longer be edited.",
  IMMUTABLE_REQUEST: "An approval request cannot be changed once made.",
  NOT_DISPATCHABLE: "It cannot be dispatched in its current state.",
  VALUES_CHANGED: "The values changed since you reviewed them. Review them again.",
  RESERVATION_MISMATCH: "The reservation does not match.",
  RECEIPT_CONFLICT: "That receipt contradicts one already recorded.",
  DISPATCH_CONSUMED: "It was already dispatched.",
  REVIEW_REQUIRED: "It needs a person's review first.",
  TARGET_IN_USE: "It is being worked on in another session.",
  TARGET_CHANGED: "What it would change has changed meanwhile.",
  TOO_MANY_DRAFTS: "Too many drafts in this session this week.",
  TOO_LARGE: "It is too large.",
  EXPIRED: "It has expired.",
  ACCOUNT_MISMATCH: "It belongs to another account.",
  REFERENCE_READ_ONLY: "A reference is read-only.",
  RECORD_UNREADABLE: "A stored record could not be read; tell an operator.",
  INVALID_CURSOR: "The live view lost its place; it reloads.",
  CURSOR_EXPIRED: "The live view was away too long; it reloads.",
  SUBSCRIBER_TOO_SLOW: "The live view fell behind; it catches up.",
  SUBSCRIPTIONS_UNAVAILABLE: "This server does not serve live updates; reload to see changes.",
  DATABASE_BUSY: "The server is busy and changed nothing. Try again in a moment.",
  SECRET_KEY_MISMATCH: "The server's secret key does not match its database; tell an operator.",
  GRAPHQL_VALIDATION_FAILED: "The console sent a request the server does not understand.",
  PERSISTED_QUERY_NOT_FOUND: "The server no longer knows this request by its hash; it is sent again.",
  PERSISTED_QUERY_NOT_ALLOWED: "This server runs only allow-listed requests, and this is not one.",
  PERSISTED_QUERY_HASH_MISMATCH: "The request's hash does not match its text.",
  PERSISTED_QUERY_UNSUPPORTED: "The server does not support that kind of persisted query.",
  REQUEST_TOO_LARGE: "What you sent is too large.",
  INTERNAL: "Something went wrong on the server. Reload to see what happened, then try again.",
  NETWORK: "The server cannot be reached. Check your connection and try again.",
  BAD_REQUEST_BODY: "The request could not be read as JSON. This is a console bug: reload the page.",
  UNSUPPORTED_CONTENT_TYPE: "The request was not sent as JSON. This is a console bug: reload the page.",
  METHOD_NOT_ALLOWED: "That request method is not allowed here. Reload the page.",
  EVENT_STREAM_CONFLICT: "The live updates' stream was opened twice. Reload the page.",
  GRAPHQL_PARSE_FAILED: "The console sent a request the server could not parse. Reload the page.",
  QUERY_TOO_DEEP: "The request nests too deeply for the server's limit.",
  TOO_MANY_ALIASES: "The request uses more aliases than the server allows.",
  TOO_MANY_TOKENS: "The request is longer than the server allows.",
  QUERY_TOO_COSTLY: "The request asks for more at once than the server allows. Ask for fewer items.",
  INTROSPECTION_DISABLED: "This server does not describe its schema.",
  INVALID_CHARACTER: "Some text contains a character that cannot be stored (such as a NUL). Remove it and try again.",
  VALUE_OUT_OF_RANGE: "A number is too large (or not a number) to be stored exactly. Check the values and try again.",
  RATE_LIMITED: "Too many requests with this token. Wait a moment and try again.",
  TOO_MANY_SUBSCRIPTIONS: "Too many live views are open on one connection. Close some tabs and reload.",
  TOO_MANY_CONNECTIONS: "Too many live connections are open with this sign-in. Close some console tabs and reload.",
  SERVICE_UNAVAILABLE: "The server cannot reach its database right now; nothing was changed. Try again in a few seconds.",
  AMENDMENT_NOT_ALLOWED: "This target does not allow amendments: approve or reject the proposal as it is.",
  NO_AMENDMENT_PENDING: "There is no amendment waiting for the proposer's acceptance.",
  POLICY_INVALID: "The approval policy is not valid; the message says where.",
  APPROVAL_LINK_UNUSABLE: "This approval link was used, has expired or was revoked. Open the task in the console instead.",
  NOTIFICATION_CHANNEL_REMOVED: "This notification channel was removed; add a new one to the queue instead.",
  ASSIGNEE_NOT_ELIGIBLE: "That person cannot take this task now (not a reviewer of the queue, disabled, without a live token, the proposer, or already decided).",
  DEADLINE_POLICY_OUT_OF_BOUNDS: "That deadline policy goes beyond what the target allows.",
};

// Who may use the console: following every queue (queueEvents) needs a reviewer, an
// operator or an admin (require_scope_role in signoff/resolvers/subscriptions.py).
export const CONSOLE_ROLES =
  "The review console is for reviewers and operators (admins too); agents and integrations use the API instead.";

/** The sentence for a refusal, with its code (and the reference an operator needs). */
// Codes whose server message names the very field and what is wrong with it: the
// server's words say more than the code's general sentence.
const SERVER_SAYS_BEST = new Set(["VALIDATION_FAILED"]);

export function describe(refusal) {
  const code = refusal.code || "INTERNAL";
  const own = SERVER_SAYS_BEST.has(code) && refusal.message;
  const sentence = own || MESSAGES[code] || refusal.message || MESSAGES.INTERNAL;
  const reference = refusal.extensions && refusal.extensions.requestId;
  return reference ? `${sentence} (${code}, request ${reference})` : `${sentence} (${code})`;
}
