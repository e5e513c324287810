// The task list: the open and claimed tasks of the viewer's queues (or one queue), live,
// each row telling one proposal from another, with a bulk decision for ticked rows.

import { describe } from "../messages.js";
import { Badge, When, html } from "../components.js";
import { age, inline } from "../format.js";
import { Layout } from "../nav.js";
import { DECIDE_MANY } from "../queries.js";
import { DECIDERS } from "../roles.js";
import { href } from "../router.js";
import { ask, loadTasks, redraw, refused, role, say, sortedTasks, state } from "../store.js";

/** Show the list of `queue` (null: all the viewer's queues). */
export function showTasks(queue) {
  state.openTask = null;
  state.selectedQueue = queue || null;
  redraw();
}

export function TasksView() {
  const tasks = sortedTasks();
  const queue = state.queues.find((q) => q.id === state.selectedQueue);
  return html`<${Layout}>
    <section class="work" aria-labelledby="tasks-title">
      <h2 id="tasks-title" tabindex="-1">
        ${queue ? queue.name : "All my queues"}<span class="count"> (${tasks.length})</span>
      </h2>
      <${BulkBar} tasks=${tasks} />
      ${tasks.length
        ? html`<ul class="tasks" aria-label="Tasks waiting">
            ${tasks.map((task) => html`<${TaskRow} key=${task.id} task=${task} />`)}
          </ul>`
        : html`<p class="empty">Nothing waiting. New tasks appear here as they arrive.</p>`}
    </section>
  <//>`;
}

function TaskRow({ task }) {
  const proposal = task.proposal;
  const pickable = proposal && proposal.state === "APPROVAL_REQUIRED" && DECIDERS.has(role());
  return html`<li class="task" data-task-id=${task.id}>
    ${pickable
      ? html`<input
          type="checkbox"
          class="pick"
          id=${`pick-${task.id}`}
          aria-label=${`Select ${task.title} for a bulk decision`}
          checked=${state.selected.has(proposal.id)}
          onChange=${(event) => toggle(proposal.id, event.target.checked)}
        />`
      : null}
    <a href=${href("task", { id: task.id })} class="task-link">${task.title}</a>
    <${WhatItIs} task=${task} />
    <div class="task-meta">
      <${Badge} value=${task.state} />
      <${Badge} value=${proposal ? proposal.state : task.kind} />
      ${proposal ? html`<span>${proposal.approvalCount} of ${proposal.requiredApprovals} approvals</span>` : null}
      ${task.assignee
        ? html`<span>${task.claimedByMe ? "claimed by you" : `claimed by ${task.assignee.name}`}</span>`
        : null}
      <span>due <${When} iso=${task.dueAt} /></span>
      <span>${task.queue.name}</span>
    </div>
  </li>`;
}

// What tells one task from another in the list: the target's summary field and the
// subject for a proposal, who asked for it and how long ago.
function WhatItIs({ task }) {
  const proposal = task.proposal;
  const parts = [];
  if (proposal) {
    const field = proposal.target.summaryField;
    if (field && proposal.payload && proposal.payload[field] !== undefined) {
      parts.push(html`<span class="summary">${`${field} ${inline(proposal.payload[field])}`}</span>`);
    }
    parts.push(html`<span>${inline(proposal.subject)}</span>`);
    parts.push(html`<span>proposed by ${proposal.proposedBy.name}</span>`);
  }
  const since = proposal ? proposal.createdAt : task.createdAt;
  parts.push(html`<span><time datetime=${since} title=${new Date(since).toLocaleString()}>${age(since)}</time></span>`);
  return html`<div class="task-what">${parts}</div>`;
}

function toggle(proposalId, on) {
  if (on) state.selected.add(proposalId);
  else state.selected.delete(proposalId);
  redraw();
}

function BulkBar({ tasks }) {
  const chosen = tasks.filter((t) => t.proposal && state.selected.has(t.proposal.id));
  if (!chosen.length) return null;
  const clear = () => {
    state.selected.clear();
    redraw();
  };
  return html`<form class="bulk" aria-label="Decide the selected proposals" onSubmit=${(event) => event.preventDefault()}>
    <p id="bulk-count">${chosen.length} selected. Each decision names the digest listed for it.</p>
    <label for="bulk-reason">Reason (required to reject, optional to approve)</label>
    <input id="bulk-reason" type="text" maxlength="2000" />
    <div class="buttons">
      <button type="button" id="bulk-approve" class="primary" onClick=${() => decideMany(chosen, "APPROVED")}>Approve selected</button>
      <button type="button" id="bulk-reject" class="danger" onClick=${() => decideMany(chosen, "REJECTED")}>Reject selected</button>
      <button type="button" id="bulk-clear" onClick=${clear}>Clear</button>
    </div>
  </form>`;
}

async function decideMany(tasks, decision) {
  const reason = document.getElementById("bulk-reason").value.trim();
  if ((decision === "REJECTED" || reason) && reason.length < 3) {
    say(decision === "REJECTED" ? "Say why you reject them: a reason of at least 3 characters." : "A reason, when given, needs at least 3 characters.");
    return;
  }
  const items = tasks.map((t) => ({ proposalId: t.proposal.id, payloadDigest: t.proposal.payloadDigest }));
  let results;
  try {
    const data = await ask(DECIDE_MANY, {
      input: { items, decision, reason: reason || null, idempotencyKey: crypto.randomUUID() },
    });
    results = data.decideProposals.results;
  } catch (failure) {
    refused(failure);
    return;
  }
  const refusedItems = results.filter((r) => r.code);
  state.selected.clear();
  const verb = decision === "APPROVED" ? "Approved" : "Rejected";
  if (!refusedItems.length) {
    say(`${verb} ${results.length} of ${results.length}.`, "ok");
  } else {
    const why = refusedItems.map((r) => describe({ code: r.code, message: r.message })).join(" ");
    say(`${verb} ${results.length - refusedItems.length} of ${results.length}; ${refusedItems.length} refused: ${why}`);
  }
  await loadTasks();
  redraw();
}
