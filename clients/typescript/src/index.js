// signoff-approvals-client for Node (ESM): propose an action to Signoff, wait for the
// decision over graphql-ws (resuming after the last cursor seen when the socket drops), and
// execute an approved action once (beginExecution, then reportExecution). Refusals are
// typed by the server's extensions.code. Types: index.d.ts beside this file.

import os from "node:os";
import { randomUUID } from "node:crypto";
import { createClient } from "graphql-ws";
import WebSocket from "ws";

const PROPOSAL_FIELDS = `
  id state actionCode payload payloadDigest operationKey revision awaitingProposer
  expiresAt appliedAt result agentExecutes executor lastErrorCode deliveryTerminal
  target { id name }
  approvals { decision reason revision approver { name } }`;

const QUERIES = {
  targets: `query { targets { id name agentExecutes active } }`,
  cursor: `query { changeFeedCursor }`,
  proposal: `query($id: ID!) { proposal(id: $id) { ${PROPOSAL_FIELDS} } }`,
  propose: `mutation($input: ProposeActionInput!) {
    proposeAction(input: $input) { replayed proposal { ${PROPOSAL_FIELDS} } } }`,
  begin: `mutation($input: BeginExecutionInput!) {
    beginExecution(input: $input) { lease proposal { ${PROPOSAL_FIELDS} } } }`,
  report: `mutation($input: ReportExecutionInput!) {
    reportExecution(input: $input) { replayed proposal { ${PROPOSAL_FIELDS} } } }`,
  events: `subscription($proposalId: ID!, $after: String) {
    proposalEvents(proposalId: $proposalId, after: $after) {
      cursor kind proposal { ${PROPOSAL_FIELDS} } } }`,
};

/** A request Signoff refused; `code` is its `extensions.code`. */
export class SignoffError extends Error {
  constructor(message, code, extensions = {}) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.extensions = extensions;
  }
}
export class Unauthenticated extends SignoffError {}
export class Forbidden extends SignoffError {}
export class NotFound extends SignoffError {}
export class PayloadSchemaInvalid extends SignoffError {
  /** `[{pointer, message}]`, one per problem. */
  get problems() {
    return Array.isArray(this.extensions.errors) ? this.extensions.errors : [];
  }
}
export class IdempotencyKeyReused extends SignoffError {}
export class PayloadDigestMismatch extends SignoffError {}
export class ExecutionConsumed extends SignoffError {}
export class NotExecutable extends SignoffError {}
export class ExecutionNotHeld extends SignoffError {}
export class ResultSchemaInvalid extends SignoffError {}

/** The approval's one execution happened (or may have) elsewhere, with no result to give. */
export class AlreadyExecuted extends SignoffError {
  constructor(proposalId, state, executor) {
    super(
      `Proposal ${proposalId} was already executed${executor ? ` by ${executor}` : ""} ` +
        `(it is ${state}); an approval authorises one execution.`,
      "ALREADY_EXECUTED",
      { proposalId, state, executor },
    );
  }
}

/** The proposal was not approved: `outcome` says how it ended. */
export class NotApproved extends SignoffError {
  constructor(outcome) {
    super(`Proposal ${outcome.proposalId} was ${outcome.kind}.`, "NOT_APPROVED", { outcome });
    this.outcome = outcome;
  }
}

/** `wait` ran out of time with nothing new. */
export class StillWaiting extends SignoffError {
  constructor(proposalId, state) {
    super(`Proposal ${proposalId} is still ${state}; wait again later.`, "STILL_WAITING", {
      proposalId,
      state,
    });
  }
}

const BY_CODE = {
  UNAUTHENTICATED: Unauthenticated,
  FORBIDDEN: Forbidden,
  NOT_FOUND: NotFound,
  PAYLOAD_SCHEMA_INVALID: PayloadSchemaInvalid,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReused,
  PAYLOAD_DIGEST_MISMATCH: PayloadDigestMismatch,
  EXECUTION_CONSUMED: ExecutionConsumed,
  NOT_EXECUTABLE: NotExecutable,
  EXECUTION_NOT_HELD: ExecutionNotHeld,
  RESULT_SCHEMA_INVALID: ResultSchemaInvalid,
};

/** The typed error for one GraphQL error object. */
export function errorFrom(error) {
  const extensions = error.extensions ?? {};
  const code = String(extensions.code ?? "INTERNAL");
  const Type = BY_CODE[code] ?? SignoffError;
  return new Type(String(error.message ?? code), code, extensions);
}

const APPROVED_STATES = new Set([
  "APPROVED", "QUEUED", "APPLYING", "EXECUTING", "EXECUTION_UNKNOWN", "APPLIED", "FAILED",
  "COMPENSATION_REQUIRED",
]);
const DONE_STATES = new Set(["APPLIED", "COMPENSATION_REQUIRED"]);

/** The outcome a proposal's state implies, or null while it waits for a decision. */
export function outcomeOf(proposal) {
  const base = { proposalId: proposal.id };
  switch (proposal.state) {
    case "REJECTED": {
      const rejection = [...proposal.approvals].reverse().find((a) => a.decision === "REJECTED");
      return { ...base, kind: "rejected", reason: rejection?.reason ?? null };
    }
    case "CANCELLED":
      return { ...base, kind: "expired" };
    case "APPROVAL_REQUIRED":
      return proposal.awaitingProposer
        ? { ...base, kind: "amended", payload: proposal.payload, payloadDigest: proposal.payloadDigest }
        : null;
    default:
      if (DONE_STATES.has(proposal.state)) return { ...base, kind: "applied", result: proposal.result };
      if (proposal.state === "EXECUTION_UNKNOWN" || (proposal.state === "FAILED" && proposal.deliveryTerminal)) {
        return { ...base, kind: "failed", errorCode: proposal.lastErrorCode };
      }
      if (APPROVED_STATES.has(proposal.state)) {
        return { ...base, kind: "approved", payload: proposal.payload, payloadDigest: proposal.payloadDigest };
      }
      return null;
  }
}

function executorLabel() {
  return `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 6)}`;
}

/** A Signoff server at `url` (`http://host:8000`), as the actor of `token`. */
export class Signoff {
  constructor({ url, token, reconnectDelayMs = 250 }) {
    const base = url.replace(/\/+$/, "");
    this.url = base.endsWith("/graphql") ? base : `${base}/graphql`;
    this.token = token;
    this.reconnectDelayMs = reconnectDelayMs;
  }

  /** One operation over HTTP; a refusal is thrown as its typed error. */
  async request(query, variables = {}) {
    const response = await fetch(this.url, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${this.token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = await response.json().catch(() => null);
    if (body?.errors?.length) throw errorFrom(body.errors[0]);
    if (!response.ok || !body) {
      throw new SignoffError(`HTTP ${response.status}`, `HTTP_${response.status}`);
    }
    return body.data;
  }

  async targets() {
    return (await this.request(QUERIES.targets)).targets;
  }

  /** Propose `payload` to `target` (its name or id). Without `key`, a new proposal. */
  async propose(target, payload, { subject = {}, key, action, expiresInSeconds } = {}) {
    const found = (await this.targets()).find((t) => t.id === target || t.name === target);
    if (!found) throw new NotFound(`No target named ${JSON.stringify(target)}.`, "NOT_FOUND");
    const cursor = (await this.request(QUERIES.cursor)).changeFeedCursor;
    const input = {
      targetId: found.id,
      actionCode: action ?? found.name,
      payload,
      subject,
      operationKey: key ?? randomUUID(),
      expiresInSeconds,
    };
    const made = (await this.request(QUERIES.propose, { input })).proposeAction;
    return { ...made.proposal, replayed: made.replayed, cursor };
  }

  /** A proposal as it is now. */
  async proposal(id) {
    return (await this.request(QUERIES.proposal, { id })).proposal;
  }

  /**
   * The proposal's decision (or, once `until` is "final", how it ended): read off its
   * state at once when it is already there, else followed over graphql-ws from the last
   * cursor seen, reconnecting after a dropped socket without losing an event.
   * `onEvent` is told each event the wait receives (its cursor and kind).
   */
  async wait(proposal, { timeoutMs, until = "decision", onEvent } = {}) {
    const settled = (state) => {
      const outcome = outcomeOf(state);
      if (!outcome) return null;
      if (until === "final") return outcome.kind === "approved" ? null : outcome;
      // The decision, even when what came of it is known already.
      if (APPROVED_STATES.has(state.state)) {
        return { proposalId: state.id, kind: "approved", payload: state.payload, payloadDigest: state.payloadDigest };
      }
      return outcome;
    };
    let state = await this.proposal(proposal.id);
    const now = settled(state);
    if (now) return now;
    let cursor = proposal.cursor ?? null;
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    const client = createClient({
      url: this.url.replace(/^http/, "ws"),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${this.token}` },
      retryAttempts: 0,
      lazy: true,
    });
    try {
      while (Date.now() < deadline) {
        const events = client.iterate({
          query: QUERIES.events,
          variables: { proposalId: proposal.id, after: cursor },
        });
        try {
          for await (const frame of withDeadline(events, deadline)) {
            if (frame.errors?.length) throw errorFrom(frame.errors[0]);
            const event = frame.data.proposalEvents;
            cursor = event.cursor;
            onEvent?.({ cursor: event.cursor, kind: event.kind });
            if (event.proposal) state = event.proposal;
            const outcome = settled(state);
            if (outcome) return outcome;
          }
        } catch (error) {
          if (error instanceof SignoffError) throw error;
          // The socket closed: resume after the last cursor seen.
          await new Promise((resolve) => setTimeout(resolve, this.reconnectDelayMs));
        }
      }
      throw new StillWaiting(proposal.id, state.state);
    } finally {
      await client.dispose();
    }
  }

  /**
   * Run `fn(payload)` once for this approval: take the execution (beginExecution), run it,
   * report how it went. An execution taken before gives its recorded result, or throws
   * AlreadyExecuted; a proposal not approved throws NotApproved.
   */
  async execute(proposal, fn, { timeoutMs, leaseSeconds } = {}) {
    const outcome = await this.wait(proposal, { timeoutMs });
    if (outcome.kind !== "approved" && outcome.kind !== "applied" && outcome.kind !== "failed") {
      throw new NotApproved(outcome);
    }
    let lease;
    try {
      const began = await this.request(QUERIES.begin, {
        input: {
          proposalId: proposal.id,
          payloadDigest: outcome.payloadDigest ?? proposal.payloadDigest,
          leaseSeconds,
          executor: executorLabel(),
        },
      });
      lease = began.beginExecution.lease;
    } catch (error) {
      if (!(error instanceof ExecutionConsumed)) throw error;
      const now = await this.proposal(proposal.id);
      if (DONE_STATES.has(now.state)) return now.result;
      throw new AlreadyExecuted(proposal.id, now.state, now.executor);
    }
    let returned;
    try {
      returned = await fn(outcome.payload ?? proposal.payload);
    } catch (error) {
      await this.report(proposal.id, lease, "FAILED", { errorCode: codeOf(error) });
      throw error;
    }
    await this.report(proposal.id, lease, "APPLIED", { result: jsonOrNull(returned) });
    return returned;
  }

  async report(proposalId, lease, outcome, { result = null, errorCode = null } = {}) {
    const input = { proposalId, lease, outcome, result, errorCode };
    return (await this.request(QUERIES.report, { input })).reportExecution;
  }
}

async function* withDeadline(iterable, deadline) {
  const iterator = iterable[Symbol.asyncIterator]();
  try {
    while (true) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      let timer;
      const timedOut = new Promise((resolve) => {
        timer = setTimeout(() => resolve({ done: true, value: undefined }), Math.min(left, 2 ** 31 - 1));
      });
      let next;
      try {
        next = await Promise.race([iterator.next(), timedOut]);
      } finally {
        // Also when next() rejects (the socket closed): a timer left running for the rest
        // of the deadline would keep Node alive after the wait returned.
        clearTimeout(timer);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    // Not awaited: after the socket failed, ending the subscription waits on nothing.
    iterator.return?.().catch(() => {});
  }
}

function codeOf(error) {
  const name = error?.constructor?.name ?? "Error";
  return name.replace(/(?<!^)([A-Z])/g, "_$1").toUpperCase().slice(0, 64);
}

function jsonOrNull(value) {
  if (value === undefined) return null;
  try {
    JSON.stringify(value);
    return value;
  } catch {
    return null;
  }
}
