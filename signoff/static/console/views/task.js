// One task and its proposal: what is asked, the payload before the form that decides it,
// claim and release, approve, reject, amend, or complete a plain task; its approvals and
// deliveries. Drawn again from the server after every change and every live event about
// it, keeping what the reviewer is typing and where.

import { Badge, JsonBlock, When, html } from "../components.js";
import { article } from "../format.js";
import { describe } from "../messages.js";
import { AMEND, CLAIM, COMPLETE, DECIDE, LOAD_TASK, RELEASE } from "../queries.js";
import { DECIDERS } from "../roles.js";
import { href } from "../router.js";
import { LIVE_STATES, ask, focusHeading, redraw, refused, role, say, state } from "../store.js";

const main = () => document.getElementById("main");

/** Open the task page of task `id` (drawn again in place when it is already open). */
export async function showTask(id) {
  // Routing again to the task already shown (the first task list arriving after the
  // reviewer opened a task, a resync) draws it again in place: starting over from
  // "Loading…" would throw away what they are typing in it.
  if (state.openTask && state.openTask.id === id) {
    await refreshTask(id);
    return;
  }
  state.openTask = { id, proposal: null };
  redraw();
  await refreshTask(id);
}

/** Load the open task again and draw it, unless the page has moved on meanwhile. */
export async function refreshTask(id) {
  state.taskAsks += 1;
  const asked = state.taskAsks;
  let data;
  try {
    data = await ask(LOAD_TASK, { id });
  } catch (failure) {
    refused(failure);
    return;
  }
  if (!state.openTask || state.openTask.id !== id) return; // moved on meanwhile
  // Answers can come back out of order: one asked before the page's last drawing would
  // draw an older state over it (and take a newer digest for an edit to set aside).
  if (asked < state.taskDrawn) return;
  state.taskDrawn = asked;
  const shown = state.openTask.proposal;
  state.openTask = data.task;
  const firstDrawing = !main().querySelector(".task-page");
  const draft = keepDraft();
  const caret = keepCaret();
  redraw();
  restoreDraft(draft, shown, data.task.proposal);
  // The heading takes focus when the page is first drawn; drawn again, it leaves the
  // reviewer in the field they are in.
  if (!restoreCaret(caret) && firstDrawing) focusHeading();
}

/** Whether the task page shows a loaded task (its keys then act on it). */
export function onTaskPage() {
  return Boolean(state.openTask && state.openTask.title);
}

export function TaskView() {
  const task = state.openTask;
  if (!task || !task.title) return html`<p class="loading">Loading…</p>`;
  // Each answer draws a new page (the key): what the reviewer typed is carried over
  // by keepDraft and restoreDraft, which decide what of it still applies.
  return html`<${TaskPage} key=${state.taskDrawn} task=${task} />`;
}

function TaskPage({ task }) {
  const proposal = task.proposal;
  return html`<article class="task-page">
    <p><a href=${href("tasks", { queue: state.selectedQueue }, state.listQuery)}>← All tasks</a> <kbd>g</kbd></p>
    <h2 tabindex="-1">${task.title}</h2>
    <${Facts} task=${task} />
    ${proposal ? html`<${JsonBlock} title="Payload" value=${proposal.payload} />` : null}
    <${Actions} task=${task} />
    ${proposal
      ? html`
          <${JsonBlock} title="Subject" value=${proposal.subject} />
          <${JsonBlock} title="Preconditions" value=${proposal.preconditions} />
          <${Approvals} proposal=${proposal} />
          <${Attempts} proposal=${proposal} />
        `
      : html`
          <${JsonBlock} title="Context" value=${task.context} />
          ${task.response ? html`<${JsonBlock} title="Response" value=${task.response} />` : null}
        `}
  </article>`;
}

function Facts({ task }) {
  const proposal = task.proposal;
  const facts = [
    ["Task", html`<${Badge} value=${task.state} /> ${task.kind}`],
    ["Queue", task.queue.name],
    ["Claimed by", task.assignee ? (task.claimedByMe ? "you" : task.assignee.name) : "nobody"],
    ["Claim lapses", html`<${When} iso=${task.claimExpiresAt} />`],
    ["Due", html`<${When} iso=${task.dueAt} />`],
  ];
  if (task.completedBy) facts.push(["Completed by", task.completedBy.name]);
  if (proposal) {
    facts.push(
      ["Proposal", html`<${Badge} value=${proposal.state} />`],
      ["Action", html`<code>${proposal.actionCode}</code>`],
      ["Target", targetLine(proposal.target)],
      ["Proposed by", proposal.proposedBy.name],
      ["Expires", html`<${When} iso=${proposal.expiresAt} />`],
      ["Payload digest", html`<code id="digest" class="digest">${proposal.payloadDigest}</code>`],
    );
  }
  return html`<dl class="facts">${facts.map(([term, value]) => html`<dt>${term}</dt><dd>${value}</dd>`)}</dl>`;
}

// A target as the task page names it: where it delivers only for those shown its URL
// (operators and admins; it is null for reviewers).
function targetLine(target) {
  return target.url ? `${target.name} (${target.method} ${target.url})` : target.name;
}

function Approvals({ proposal }) {
  return html`<section aria-labelledby="approvals-title">
    <h3 id="approvals-title">Approvals: ${proposal.approvalCount} of ${proposal.requiredApprovals}</h3>
    ${proposal.approvals.length
      ? html`<ul class="approvals">
          ${proposal.approvals.map(
            (a) => html`<li key=${a.id}>
              <${Badge} value=${a.decision} /> ${a.approver.name}, <${When} iso=${a.createdAt} />${a.reason ? ` — “${a.reason}”` : ""}
            </li>`,
          )}
        </ul>`
      : html`<p class="empty">No decisions yet.</p>`}
  </section>`;
}

// A target without a url: its agent executes the approved action once, and reports.
function Execution({ proposal }) {
  return html`<section aria-labelledby="execution-title">
    <h3 id="execution-title">Execution by the agent</h3>
    ${proposal.executedBy
      ? html`<p id="executed-by">
          ${`${proposal.executedBy.name}${proposal.executor ? ` (${proposal.executor})` : ""} began it `}<${When}
            iso=${proposal.executionStartedAt}
          />; it is <${Badge} value=${proposal.state} />.
        </p>`
      : html`<p class="empty">Not executed yet.</p>`}
    ${proposal.lastErrorCode ? html`<p>Last error: <code>${proposal.lastErrorCode}</code></p>` : null}
    ${proposal.result == null ? null : html`<${JsonBlock} title="Result" value=${proposal.result} />`}
  </section>`;
}

const ATTEMPT_COLUMNS = ["#", "result", "HTTP", "error", "took", "started"];

function Attempts({ proposal }) {
  if (proposal.agentExecutes) return html`<${Execution} proposal=${proposal} />`;
  return html`<section aria-labelledby="attempts-title">
    <h3 id="attempts-title">Delivery attempts (${proposal.deliveryAttemptCount})</h3>
    ${proposal.attempts.length
      ? html`<div class="table-scroll">
          <table>
            <thead><tr>${ATTEMPT_COLUMNS.map((c) => html`<th scope="col">${c}</th>`)}</tr></thead>
            <tbody>
              ${proposal.attempts.map(
                (a) => html`<tr key=${a.id}>
                  <td>${a.attemptNumber}</td>
                  <td><${Badge} value=${a.responseClass} /></td>
                  <td>${a.statusCode ?? "—"}</td>
                  <td>${a.errorCode ?? "—"}</td>
                  <td>${a.durationMs == null ? "—" : `${a.durationMs} ms`}</td>
                  <td><${When} iso=${a.startedAt} /></td>
                </tr>`,
              )}
            </tbody>
          </table>
        </div>`
      : html`<p class="empty">Not delivered yet.</p>`}
    ${proposal.lastErrorCode ? html`<p>Last error: <code>${proposal.lastErrorCode}</code></p>` : null}
    ${proposal.state === "FAILED" && !proposal.deliveryTerminal
      ? html`<p>Delivery will be retried at <${When} iso=${proposal.nextAttemptAt} />.</p>`
      : null}
  </section>`;
}

function Actions({ task }) {
  const live = LIVE_STATES.has(task.state);
  // Claiming, deciding, amending and completing are the deciders' (the bulk checkboxes'
  // rule): anyone else reads the task and is told why it offers no form.
  if (!DECIDERS.has(role())) {
    if (!live) return null;
    const name = role().toLowerCase();
    return html`<section class="actions" aria-label="Actions">
      <p id="no-decision" class="hint">
        You are signed in as ${article(name)} ${name}: only reviewers of this queue and admins decide its work, so there is no decision form here.
      </p>
    </section>`;
  }
  const buttons = [];
  if (live && !task.claimedByMe) {
    buttons.push(html`<button type="button" id="claim" onClick=${() => act(CLAIM, { id: task.id }, "Claimed.")}>Claim <kbd>c</kbd></button>`);
  }
  if (live && task.claimedByMe) {
    buttons.push(html`<button type="button" id="release" onClick=${() => act(RELEASE, { id: task.id }, "Released.")}>Release <kbd>l</kbd></button>`);
  }
  const proposal = task.proposal;
  let form = null;
  if (live && proposal && proposal.state === "APPROVAL_REQUIRED") {
    const standing = proposal.viewerStanding;
    // While another reviewer holds the task the reason box stays (with no decision to
    // press), so what is typed in it is there when the task is released.
    const held = standing.approveRefusal && standing.approveRefusal.code === "TASK_CLAIMED_BY_OTHER";
    form = html`
      <${Standing} proposal=${proposal} />
      ${standing.mayApprove || standing.mayReject || held
        ? html`<${DecideForm} proposal=${proposal} standing=${standing} />`
        : null}
      <${AmendForm} proposal=${proposal} />
    `;
  } else if (live && !proposal) {
    form = html`<${CompleteForm} task=${task} />`;
  }
  if (!buttons.length && !form) return null; // nothing left to do here
  return html`<section class="actions" aria-label="Actions">
    <div class="buttons">${buttons}</div>
    ${form}
  </section>`;
}

const DECIDED = { APPROVED: "You approved", REJECTED: "You rejected" };

// Where the reviewer stands on a proposal still waiting for approvals: what they decided,
// how many approvals it still waits for and who has decided, or why they may not decide.
function Standing({ proposal }) {
  const standing = proposal.viewerStanding;
  const current = proposal.approvals.filter((a) => a.revision === proposal.revision);
  const waiting = Math.max(0, proposal.requiredApprovals - proposal.approvalCount);
  const parts = [];
  if (standing.decision) {
    parts.push(standing.decidedAs && standing.decidedAs !== state.viewer.actor.name
      ? `${DECIDED[standing.decision]} as ${standing.decidedAs}`
      : DECIDED[standing.decision]);
  }
  parts.push(`waiting for ${waiting} more ${waiting === 1 ? "reviewer" : "reviewers"}`);
  const closed = !standing.decision && !standing.mayApprove ? standing.approveRefusal : null;
  return html`<div class="standing" id="standing">
    <p id="standing-summary"><strong>${parts.join(" · ")}</strong></p>
    <p id="standing-decided">
      ${current.length
        ? `Decided so far: ${current.map((a) => `${a.approver.name} (${a.decision === "APPROVED" ? "approved" : "rejected"})`).join(", ")}.`
        : "Nobody has decided this revision yet."}
    </p>
    ${closed ? html`<p id="standing-closed" class="hint">${describe(closed)}</p>` : null}
  </div>`;
}

function DecideForm({ proposal, standing }) {
  return html`<form class="decide" onSubmit=${(event) => event.preventDefault()}>
    <label for="reason">${standing.mayApprove || !standing.mayReject ? "Reason (required to reject, optional to approve)" : "Reason (required to reject)"}</label>
    <textarea id="reason" rows="3" maxlength="2000" aria-describedby="decide-help" onKeyDown=${reasonKeys}></textarea>
    <p id="decide-help" class="hint">
      Your decision names the digest shown above: <code>${proposal.payloadDigest}</code>. Ctrl+Enter in the reason rejects.
    </p>
    <div class="buttons">
      ${standing.mayApprove
        ? html`<button type="button" id="approve" class="primary" onClick=${() => decide("APPROVED")}>Approve <kbd>a</kbd></button>`
        : null}
      ${standing.mayReject
        ? html`<button type="button" id="reject" class="danger" onClick=${() => decide("REJECTED")}>Reject <kbd>r</kbd></button>`
        : null}
    </div>
  </form>`;
}

function CompleteForm({ task }) {
  const submit = (event) => {
    event.preventDefault();
    complete(task);
  };
  return html`<form class="decide" onSubmit=${submit}>
    <label for="response">Response (JSON that meets the task's response schema)</label>
    <textarea id="response" rows="4" spellcheck="false" defaultValue="{}"></textarea>
    <div class="buttons"><button type="submit" class="primary">Complete</button></div>
  </form>`;
}

function AmendForm({ proposal }) {
  const submit = (event) => {
    event.preventDefault();
    amend();
  };
  return html`<details class="amend">
    <summary>Amend the payload instead of rejecting it</summary>
    <form onSubmit=${submit}>
      <label for="amend-payload">New payload (JSON; checked against the target's schema)</label>
      <textarea id="amend-payload" rows="6" spellcheck="false" defaultValue=${JSON.stringify(proposal.payload, null, 2)}></textarea>
      <label for="amend-reason">Why (required)</label>
      <textarea id="amend-reason" rows="2" maxlength="2000"></textarea>
      <p class="hint">
        The amendment names the digest shown above; approvals so far are void and the proposal needs its full quorum again.
      </p>
      <div class="buttons"><button type="submit" id="amend">Amend</button></div>
    </form>
  </details>`;
}

// ---------------------------------------------------------------- what survives a drawing

// Where the reviewer is on the page: the field that has focus and its selection, so that
// typing goes on in the same place (a selection typed over is still replaced).
function keepCaret() {
  const active = document.activeElement;
  if (!active || !active.id || !main().contains(active)) return null;
  const selection = typeof active.selectionStart === "number"
    ? [active.selectionStart, active.selectionEnd, active.selectionDirection]
    : null;
  return { id: active.id, selection, scrollTop: active.scrollTop };
}

function restoreCaret(caret) {
  const field = caret && document.getElementById(caret.id);
  if (!field) return false;
  field.focus();
  if (caret.selection && typeof field.selectionStart === "number") field.setSelectionRange(...caret.selection);
  field.scrollTop = caret.scrollTop;
  return true;
}

// What the reviewer has typed or opened on a task page survives the page being drawn
// again, which every live event about the task does, often while they are typing.
const DRAFT_FIELDS = ["reason", "response", "amend-payload", "amend-reason"];

function keepDraft() {
  const values = {};
  for (const id of DRAFT_FIELDS) {
    const field = document.getElementById(id);
    if (field) values[id] = field.value;
  }
  const amendForm = main().querySelector("details.amend");
  const payload = document.getElementById("amend-payload");
  return {
    values,
    amendOpen: Boolean(amendForm && amendForm.open),
    payloadEdited: Boolean(payload && payload.value !== payload.defaultValue),
  };
}

function restoreDraft(draft, before, now) {
  // An edited payload was written against the digest shown before; if the payload
  // has changed since, keeping the edit would amend a revision the reviewer never saw.
  const moved = Boolean(before && now && before.payloadDigest !== now.payloadDigest);
  for (const [id, value] of Object.entries(draft.values)) {
    if (id === "amend-payload" && (moved || !draft.payloadEdited)) continue;
    const field = document.getElementById(id);
    if (field) field.value = value;
  }
  const amendForm = main().querySelector("details.amend");
  if (amendForm && draft.amendOpen) amendForm.open = true;
  if (moved && draft.payloadEdited) {
    say("The payload changed while you were editing it: your edit was set aside, the form shows the new revision.");
  }
}

// ---------------------------------------------------------------- acting on it

async function act(mutation, variables, done, settled = () => {}) {
  try {
    await ask(mutation, variables);
    say(done, "ok");
    settled();
  } catch (failure) {
    refused(failure);
  }
  if (state.openTask) await refreshTask(state.openTask.id);
}

async function decide(decision) {
  const task = state.openTask;
  if (!task || !task.proposal) return;
  const box = document.getElementById("reason");
  const reason = box ? box.value.trim() : "";
  if (decision === "REJECTED" && reason.length < 3) {
    say("Say why you reject it: a reason of at least 3 characters.");
    if (box) box.focus();
    return;
  }
  if (reason && reason.length < 3) {
    say("A reason, when given, needs at least 3 characters.");
    if (box) box.focus();
    return;
  }
  await act(
    DECIDE,
    {
      input: {
        proposalId: task.proposal.id,
        decision,
        payloadDigest: task.proposal.payloadDigest, // the digest this page showed
        reason: reason || null,
      },
    },
    decision === "APPROVED" ? "Approved." : "Rejected.",
  );
}

async function amend() {
  const task = state.openTask;
  if (!task || !task.proposal) return;
  let payload;
  try {
    payload = JSON.parse(document.getElementById("amend-payload").value);
  } catch (notJson) {
    say(`The new payload is not JSON: ${notJson.message}`);
    return;
  }
  const reason = document.getElementById("amend-reason").value.trim();
  if (reason.length < 3) {
    say("Say why you amend it: a reason of at least 3 characters.");
    document.getElementById("amend-reason").focus();
    return;
  }
  const input = {
    proposalId: task.proposal.id,
    basedOnDigest: task.proposal.payloadDigest, // the digest this page showed
    payload,
    reason,
    idempotencyKey: crypto.randomUUID(),
  };
  await act(AMEND, { input }, "Amended: the proposal has a new revision and digest.", closeAmendForm);
}

// Once an amendment is made, what was typed for it is spent: nothing of it is kept
// when the page is drawn again with the new revision.
function closeAmendForm() {
  const form = main().querySelector("details.amend");
  if (form) form.open = false;
  for (const id of ["amend-payload", "amend-reason"]) {
    const field = document.getElementById(id);
    if (field) field.value = field.defaultValue;
  }
}

async function complete(task) {
  let response;
  try {
    response = JSON.parse(document.getElementById("response").value);
  } catch (notJson) {
    say(`The response is not JSON: ${notJson.message}`);
    return;
  }
  await act(COMPLETE, { input: { taskId: task.id, response } }, "Completed.");
}

function reasonKeys(event) {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    decide("REJECTED");
  }
}

/** The task page's "r": reject when a reason is typed, else put the keyboard in the reason. */
export function rejectFromKeyboard() {
  const box = document.getElementById("reason");
  if (box && box.value.trim().length >= 3) decide("REJECTED");
  else if (box) {
    box.focus();
    say("Type a reason, then press Ctrl+Enter (or the Reject button) to reject.", "info");
  }
}
