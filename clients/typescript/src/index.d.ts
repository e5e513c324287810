// Types of signoff-approvals-client (src/index.js).

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface Approval {
  decision: "APPROVED" | "REJECTED";
  reason: string | null;
  revision: number;
  approver: { name: string };
}

export interface ProposalState {
  id: string;
  state: string;
  actionCode: string;
  payload: Record<string, Json>;
  payloadDigest: string;
  operationKey: string;
  revision: number;
  awaitingProposer: boolean;
  expiresAt: string;
  appliedAt: string | null;
  result: Json;
  agentExecutes: boolean;
  executor: string | null;
  lastErrorCode: string | null;
  deliveryTerminal: boolean;
  target: { id: string; name: string };
  approvals: Approval[];
}

/** A proposal as `propose` answers it: with whether it was replayed, and the feed cursor
 * read before it was made (so `wait` misses none of its events). */
export interface Proposal extends ProposalState {
  replayed: boolean;
  cursor: string | null;
}

export type Outcome =
  | { kind: "approved"; proposalId: string; payload: Record<string, Json>; payloadDigest: string }
  | { kind: "amended"; proposalId: string; payload: Record<string, Json>; payloadDigest: string }
  | { kind: "rejected"; proposalId: string; reason: string | null }
  | { kind: "expired"; proposalId: string }
  | { kind: "applied"; proposalId: string; result: Json }
  | { kind: "failed"; proposalId: string; errorCode: string | null };

export interface Target {
  id: string;
  name: string;
  agentExecutes: boolean;
  active: boolean;
}

export class SignoffError extends Error {
  code: string;
  extensions: Record<string, unknown>;
  constructor(message: string, code: string, extensions?: Record<string, unknown>);
}
export class Unauthenticated extends SignoffError {}
export class Forbidden extends SignoffError {}
export class NotFound extends SignoffError {}
export class PayloadSchemaInvalid extends SignoffError {
  get problems(): { pointer: string; message: string }[];
}
export class IdempotencyKeyReused extends SignoffError {}
export class PayloadDigestMismatch extends SignoffError {}
export class ExecutionConsumed extends SignoffError {}
export class NotExecutable extends SignoffError {}
export class ExecutionNotHeld extends SignoffError {}
export class ResultSchemaInvalid extends SignoffError {}
export class AlreadyExecuted extends SignoffError {
  constructor(proposalId: string, state: string, executor: string | null);
}
export class NotApproved extends SignoffError {
  outcome: Outcome;
  constructor(outcome: Outcome);
}
export class StillWaiting extends SignoffError {
  constructor(proposalId: string, state: string);
}

export function errorFrom(error: { message?: string; extensions?: Record<string, unknown> }): SignoffError;
export function outcomeOf(proposal: ProposalState): Outcome | null;

export interface ProposeOptions {
  subject?: Record<string, Json>;
  /** Names the call for crash-safe retries; without it each call is a new proposal. */
  key?: string;
  action?: string;
  expiresInSeconds?: number;
}

export class Signoff {
  constructor(options: { url: string; token: string; reconnectDelayMs?: number });
  request<T = Record<string, unknown>>(query: string, variables?: Record<string, unknown>): Promise<T>;
  targets(): Promise<Target[]>;
  propose(target: string, payload: Record<string, Json>, options?: ProposeOptions): Promise<Proposal>;
  proposal(id: string): Promise<ProposalState>;
  wait(
    proposal: { id: string; cursor?: string | null },
    options?: {
      timeoutMs?: number;
      until?: "decision" | "final";
      /** Told each event the wait receives over graphql-ws. */
      onEvent?: (event: { cursor: string; kind: string }) => void;
    },
  ): Promise<Outcome>;
  execute<T>(
    proposal: Proposal | ProposalState,
    fn: (payload: Record<string, Json>) => T | Promise<T>,
    options?: { timeoutMs?: number; leaseSeconds?: number },
  ): Promise<T | Json>;
  report(
    proposalId: string,
    lease: number,
    outcome: "APPLIED" | "FAILED",
    options?: { result?: Json; errorCode?: string | null },
  ): Promise<{ replayed: boolean; proposal: ProposalState }>;
}
