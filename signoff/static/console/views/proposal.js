// One proposal's whole story, kept current by the live feed: what was proposed and what became of it, its timeline read
// from its audit records (proposed, amended with the diff, each reviewer's decision with
// the digest, the rule that set the quorum, deliveries or executions, incidents), and its
// decision receipt, with how to verify it offline (`signoff audit verify-receipt`).

import { Badge, JsonBlock, When, html } from "../components.js";
import { LOAD_PROPOSAL } from "../queries.js";
import { href } from "../router.js";
import { ask, focusHeading, redraw, refused, state } from "../store.js";

let shown = null; // { id, proposal } once loaded
let asks = 0;

/** Load proposal `id` and draw its page. */
export async function showProposal(id) {
  state.openTask = null;
  asks += 1;
  const asked = asks;
  shown = { id, proposal: null };
  redraw();
  let data;
  try {
    data = await ask(LOAD_PROPOSAL, { id });
  } catch (failure) {
    refused(failure);
    return;
  }
  if (asked !== asks || state.route.name !== "proposal") return; // moved on meanwhile
  shown = { id, proposal: data.proposal };
  redraw();
  focusHeading();
}

/** Load the page's proposal again after a live event about it: drawn in place. */
export async function refreshProposal(id) {
  if (!shown || shown.id !== id || !shown.proposal) return;
  asks += 1;
  const asked = asks;
  let data;
  try {
    data = await ask(LOAD_PROPOSAL, { id });
  } catch (failure) {
    refused(failure);
    return;
  }
  if (asked !== asks || state.route.name !== "proposal" || !shown || shown.id !== id) return;
  shown = { id, proposal: data.proposal };
  redraw();
}

/** Forget the page (signed out): the next visit loads it afresh. */
export function leaveProposal() {
  shown = null;
}

export function ProposalView() {
  if (!shown || !shown.proposal) return html`<p class="loading">Loading…</p>`;
  const proposal = shown.proposal;
  return html`<article class="proposal-page">
    <p><a href=${href("history")}>← History</a></p>
    <h2 tabindex="-1"><code>${proposal.actionCode}</code> on ${proposal.target.name}</h2>
    <${Facts} proposal=${proposal} />
    <${JsonBlock} title="Payload" value=${proposal.payload} />
    <${JsonBlock} title="Subject" value=${proposal.subject} />
    <${Timeline} proposal=${proposal} />
    <${Receipt} proposal=${proposal} />
  </article>`;
}

function Facts({ proposal }) {
  const facts = [
    ["State", html`<${Badge} value=${proposal.state} />`],
    ["Target", proposal.target.name],
    ["Proposed by", html`${proposal.proposedBy.name}, <${When} iso=${proposal.createdAt} />`],
    ["Decided", html`<${When} iso=${proposal.decidedAt} />`],
    ["Approvals", `${proposal.approvalCount} of ${proposal.requiredApprovals}`],
    ["Revision", String(proposal.revision)],
    ["Payload digest", html`<code class="digest">${proposal.payloadDigest}</code>`],
  ];
  if (proposal.appliedAt) facts.push(["Applied", html`<${When} iso=${proposal.appliedAt} />`]);
  if (proposal.task) facts.push(["Approval task", html`<a href=${href("task", { id: proposal.task.id })}>Open the task</a>`]);
  return html`<dl class="facts">${facts.map(([term, value]) => html`<dt>${term}</dt><dd>${value}</dd>`)}</dl>`;
}

// ---------------------------------------------------------------- the timeline

// What each audit action says, as the head of its line (the actor, when there is one,
// comes first: "alice approved").
const SAID = {
  "proposal.proposed": "proposed it",
  "proposal.amended": "amended it",
  "proposal.amendment_accepted": "accepted the amendment",
  "approval.approved": "approved",
  "approval.rejected": "rejected",
  "proposal.approved": "Approved: the quorum was reached",
  "proposal.auto_approved": "Let through by the target's approval policy",
  "proposal.rejected": "Rejected",
  "proposal.escalated": "Escalated at its deadline",
  "proposal.expired": "Expired: nobody approved it in time",
  "proposal.deadline_rejected": "Rejected at its deadline",
  "proposal.delivery_started": "Delivery started",
  "proposal.accepted": "The receiver accepted it (202)",
  "proposal.retry_scheduled": "A retry was scheduled",
  "proposal.delivery_failed": "Delivery failed for good",
  "proposal.delivery_refused": "Delivery refused before sending",
  "proposal.lease_released": "A stalled delivery was released",
  "proposal.retried": "Delivery retried by an operator",
  "proposal.result_reported": "The result was reported",
  "proposal.dead_lettered": "Dead-lettered",
  "proposal.execution_started": "began executing it",
  "proposal.execution_failed": "reported that the execution failed",
  "proposal.execution_unknown": "The execution's outcome is unknown: its lease lapsed unreported",
  "proposal.applied": "Applied",
  "proposal.compensation_required": "Compensation required",
  "incident.opened": "Incident opened",
  "incident.recurred": "Incident recurred",
  "incident.acknowledged": "acknowledged the incident",
  "incident.retried": "retried the incident's delivery",
  "incident.resolved": "resolved the incident",
};

function Timeline({ proposal }) {
  return html`<section aria-labelledby="timeline-title">
    <h3 id="timeline-title">Timeline</h3>
    <ol class="timeline" id="timeline">
      ${proposal.timeline.map((entry) => html`<${Entry} key=${entry.auditEventId} entry=${entry} proposal=${proposal} />`)}
    </ol>
  </section>`;
}

function Entry({ entry, proposal }) {
  return html`<li class="timeline-entry" data-kind=${entry.kind} data-action=${entry.action}>
    <p class="timeline-head"><${When} iso=${entry.at} /> <span class="timeline-said">${said(entry)}</span></p>
    <${Details} entry=${entry} proposal=${proposal} />
  </li>`;
}

// "alice approved" for what a person did; Signoff's own steps as they are, with the
// actor that set them off after them.
function said(entry) {
  const words = SAID[entry.action];
  const actor = entry.actor ? entry.actor.name : null;
  if (!words) return html`<code>${entry.action}</code>${actor ? ` · ${actor}` : ""}`;
  if (/^[a-z]/.test(words)) return `${actor || "Signoff"} ${words}`;
  return actor ? `${words} · ${actor}` : words;
}

function Details({ entry, proposal }) {
  const lines = [];
  if (entry.kind === "PROPOSED" || entry.kind === "AMENDED" || entry.kind === "AUTO_APPROVED") {
    lines.push(html`<p class="timeline-quorum">${quorum(entry, proposal)}</p>`);
  }
  if (entry.kind === "AMENDED") {
    lines.push(html`<p>Revision ${entry.revision}: <code class="digest">${entry.fromDigest}</code> → <code class="digest">${entry.payloadDigest}</code></p>`);
    lines.push(html`<${Diff} operations=${entry.diff} />`);
  } else if (entry.payloadDigest) {
    const revision = entry.revision ? ` (revision ${entry.revision})` : "";
    lines.push(html`<p>Digest <code class="digest">${entry.payloadDigest}</code>${revision}</p>`);
  }
  if (entry.reason) lines.push(html`<p class="timeline-reason">“${entry.reason}”</p>`);
  if (entry.attempt) lines.push(html`<p class="timeline-attempt">${attemptLine(entry.attempt)}</p>`);
  if (entry.errorCode) lines.push(html`<p>Error <code>${entry.errorCode}</code></p>`);
  if (entry.incident) {
    lines.push(html`<p class="timeline-incident">${entry.incident.title} <${Badge} value=${entry.incident.state} /></p>`);
  }
  return lines.length ? html`<div class="timeline-details">${lines}</div>` : null;
}

// Which rule set the quorum: the approval policy's rule when one matched, else the target.
function quorum(entry, proposal) {
  const rule = entry.policyRule;
  if (!rule) {
    return entry.kind === "PROPOSED"
      ? `Needs ${plural(proposal.requiredApprovals, "approval")}, as its target requires (no approval policy).`
      : "";
  }
  const which = rule.rule === null ? "the approval policy's default" : `policy rule ${rule.rule}${rule.name ? ` “${rule.name}”` : ""}`;
  const where = rule.queue ? ` in ${rule.queue.name}` : "";
  return `Needs ${plural(rule.approvals, "approval")}${where}, set by ${which}.`;
}

function plural(count, word) {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function Diff({ operations }) {
  if (!operations.length) return null;
  return html`<ul class="timeline-diff" aria-label="What the amendment changed">
    ${operations.map(
      (op) => html`<li>
        <code>${op.op}</code> <code>${op.path}</code>${op.op === "remove" ? "" : html` → <code>${JSON.stringify(op.value)}</code>`}${op.from ? html` (from <code>${op.from}</code>)` : ""}
      </li>`,
    )}
  </ul>`;
}

function attemptLine(attempt) {
  const parts = [`Attempt ${attempt.attemptNumber}: ${attempt.responseClass}`];
  if (attempt.statusCode != null) parts.push(`HTTP ${attempt.statusCode}`);
  if (attempt.errorCode) parts.push(attempt.errorCode);
  if (attempt.durationMs != null) parts.push(`${attempt.durationMs} ms`);
  return parts.join(", ");
}

// ---------------------------------------------------------------- the receipt

function Receipt({ proposal }) {
  const receipt = proposal.decisionReceipt;
  const checkpoint = receipt.checkpoint;
  const proven = receipt.records.length;
  const waiting = receipt.notYetCheckpointed.length;
  const file = `receipt-${proposal.id}.json`;
  const save = () => {
    const blob = new Blob([JSON.stringify(receipt, null, 2)], { type: "application/json" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = file;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 0);
  };
  return html`<section aria-labelledby="receipt-title" class="receipt" id="receipt">
    <h3 id="receipt-title">Decision receipt</h3>
    <p id="receipt-summary">
      ${checkpoint
        ? `${plural(proven, "audit record")} proven against the checkpoint of ${checkpoint.size} records signed ${checkpoint.issuedAt} (key ${checkpoint.keyId})`
        : "No signed checkpoint covers the log yet"}${waiting ? `; ${plural(waiting, "record")} not in a checkpoint yet: verify again after the next one.` : "."}
    </p>
    <div class="buttons"><button type="button" id="receipt-save" onClick=${save}>Save ${file}</button></div>
    <p class="hint" id="receipt-verify">
      Verify it offline, with no server, against the audit key:
    </p>
    <pre class="command">curl -s ${window.location.origin}/.well-known/signoff-audit-key > audit.pub
signoff audit verify-receipt ${file} --public-key audit.pub</pre>
  </section>`;
}
