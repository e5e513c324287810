// The task list: the open and claimed tasks of the viewer's queues (or one queue), live.
// Each row reads the action, the target's summary with its currency, the subject, the
// proposer, its age and the time left, and opens its proposal wherever it is clicked.
// Filters, sort and search live in the route's query (listing.js), so a link shares them.

import { SESSION } from "../api.js";
import { describe } from "../messages.js";
import { Badge, When, html } from "../components.js";
import { age, inline, localTime, summaryValue } from "../format.js";
import { SHOWS, SORTS, filtersOf, queryOf } from "../listing.js";
import { Layout } from "../nav.js";
import { DECIDE_MANY } from "../queries.js";
import { DECIDERS } from "../roles.js";
import { go, href } from "../router.js";
import { ask, listed, loadTasks, redraw, refused, role, say, state } from "../store.js";

// Rows drawn at once: a list of a thousand is read whole (filters and counts cover all of
// it) but drawn a screenful at a time, so that a filter change stays quick.
const ROWS_AT_ONCE = 50;

// A list opened, or filtered anew, is drawn a screenful first, so that its rows are on
// screen sooner; the rest of its first rows follow in the next frame.
const FIRST_SCREEN = 15;
let screenfulOnly = false;
let shownList = null; // the queue and filters the list was last shown with

function drawScreenfulFirst() {
  screenfulOnly = true;
  // In the frame after the first one: work queued before that frame is painted would
  // hold it back.
  requestAnimationFrame(() =>
    requestAnimationFrame(() => {
      screenfulOnly = false;
      if (state.route.name === "tasks") redraw();
    }),
  );
}

/** A new list (or new filters): its first rows, a screenful of them at first. */
function startList() {
  state.listRows = ROWS_AT_ONCE;
  drawScreenfulFirst();
}

/** Show the list of `queue` (null: all the viewer's queues) with the filters of `query`. */
export function showTasks(queue, query) {
  state.openTask = null;
  const chosen = queue || null;
  const list = `${chosen} ${query}`;
  if (list !== shownList) startList();
  shownList = list;
  state.selectedQueue = chosen;
  state.listQuery = query;
  redraw();
}

function showMore() {
  state.listRows += ROWS_AT_ONCE;
  redraw();
}

/** The address of the list as it is, with `changes` made to its filters. */
function listHref(changes) {
  const filters = { ...filtersOf(state.listQuery), ...changes };
  return href("tasks", { queue: state.selectedQueue }, queryOf(filters));
}

export function TasksView() {
  const now = Date.now();
  const filters = filtersOf(state.listQuery);
  const { rows, shows, targets } = listed(now);
  const queue = state.queues.find((q) => q.id === state.selectedQueue);
  return html`<${Layout}>
    <section class="work" aria-labelledby="tasks-title">
      <h2 id="tasks-title" tabindex="-1">
        ${queue ? queue.name : "All my queues"}<span class="count"> (${rows.length})</span>
      </h2>
      <${NoQueue} />
      <${Filters} filters=${filters} shows=${shows} targets=${targets} />
      <${BulkBar} tasks=${rows} />
      ${state.loadingMore ? html`<p class="hint" id="loading-more" role="status">Loading more tasks…</p>` : null}
      ${rows.length
        ? html`<ul class="tasks" aria-label="Tasks waiting">
            ${rows
              .slice(0, screenfulOnly ? Math.min(FIRST_SCREEN, state.listRows) : state.listRows)
              .map((task) => html`<${TaskRow} key=${task.id} task=${task} now=${now} />`)}
          </ul>`
        : html`<p class="empty">${emptyText(filters)}</p>`}
      ${rows.length > state.listRows
        ? html`<p class="more">
            <button type="button" id="more-rows" onClick=${showMore}>
              Show ${Math.min(ROWS_AT_ONCE, rows.length - state.listRows)} more of ${rows.length - state.listRows}
            </button>
          </p>`
        : null}
    </section>
  <//>`;
}

// A reviewer in no queue would wait for tasks that can never come: say why, and what
// to ask for. Signed in with the company account, the groups map to queues that do not
// exist (the claim mapping names queues by slug; a membership is made only for a queue
// that exists).
function NoQueue() {
  if (role() !== "REVIEWER" || state.queues.length) return null;
  const text = state.token === SESSION
    ? "Your groups at the identity provider map you to no queue that exists in Signoff, so no task can reach you here. Ask an admin to create the queue your group names in the sign-in claim mapping, or to map your group to an existing queue."
    : "This reviewer is a member of no queue, so no task can reach you here. Ask an admin to add you to a queue.";
  return html`<p id="no-queue" class="notice info" role="status">${text}</p>`;
}

function emptyText(filters) {
  const plain = filters.show === "all" && !filters.target && !filters.q.trim();
  return plain
    ? "Nothing waiting. New tasks appear here as they arrive."
    : "No task matches these filters.";
}

function Filters({ filters, shows, targets }) {
  // The search box changes the address in place (no history entry per key), the other
  // filters are links and choices that add one, so Back goes to the previous filter.
  const search = (event) => {
    const query = queryOf({ ...filters, q: event.target.value });
    history.replaceState(null, "", href("tasks", { queue: state.selectedQueue }, query));
    state.listQuery = query;
    shownList = `${state.selectedQueue} ${query}`;
    startList();
    state.route = { ...state.route, query };
    redraw();
  };
  return html`<div class="filters">
    <nav aria-label="Filter tasks">
      <ul class="shows">
        ${SHOWS.map(
          ([name, label]) => html`<li key=${name}>
            <a
              href=${listHref({ show: name })}
              class="show"
              data-show=${name}
              aria-current=${filters.show === name ? "true" : null}
            >${label} <span class="count">${shows[name]}</span></a>
          </li>`,
        )}
      </ul>
    </nav>
    <form class="list-tools" role="search" onSubmit=${(event) => event.preventDefault()}>
      <span class="tool">
        <label for="task-search">Search subject and payload</label>
        <input id="task-search" type="search" value=${filters.q} onInput=${search} autocomplete="off" />
      </span>
      <span class="tool">
        <label for="task-target">Target</label>
        <select id="task-target" onChange=${(event) => go(listHref({ target: event.target.value }))}>
          <option value="" selected=${!filters.target}>All targets</option>
          ${targets.map(
            (target) => html`<option key=${target.id} value=${target.id} selected=${filters.target === target.id}>
              ${`${target.name} (${target.count})`}
            </option>`,
          )}
        </select>
      </span>
      <span class="tool">
        <label for="task-sort">Sort by</label>
        <select id="task-sort" onChange=${(event) => go(listHref({ sort: event.target.value }))}>
          ${SORTS.map(
            ([name, label]) => html`<option key=${name} value=${name} selected=${filters.sort === name}>${label}</option>`,
          )}
        </select>
      </span>
    </form>
  </div>`;
}

function TaskRow({ task, now }) {
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
    <${WhatItIs} task=${task} now=${now} />
    <div class="task-meta">
      <${Badge} value=${task.state} />
      <${Badge} value=${proposal ? proposal.state : task.kind} />
      ${proposal ? html`<span>${proposal.approvalCount} of ${proposal.requiredApprovals} approvals</span>` : null}
      ${task.assignee
        ? html`<span>${task.claimedByMe ? "claimed by you" : `claimed by ${task.assignee.name}`}</span>`
        : null}
      <${TimeLeft} task=${task} now=${now} />
      <span>${task.queue.name}</span>
    </div>
  </li>`;
}

// How long is left before the task is due, or how long ago it was.
function TimeLeft({ task, now }) {
  if (!task.dueAt) return null;
  const overdue = Date.parse(task.dueAt) < now;
  return html`<span class=${overdue ? "due overdue" : "due"}>
    ${overdue ? "overdue, due " : "due "}<${When} iso=${task.dueAt} />
  </span>`;
}

// What tells one task from another in the list: the target's summary field (with its
// currency) and the subject for a proposal, who asked for it and how long ago.
function WhatItIs({ task, now }) {
  const proposal = task.proposal;
  const parts = [];
  if (proposal) {
    const field = proposal.target.summaryField;
    if (field && proposal.payload && proposal.payload[field] !== undefined) {
      parts.push(html`<span class="summary" title=${field}>${summaryValue(proposal.payload[field], proposal.payload)}</span>`);
    }
    parts.push(html`<span class="subject">${inline(proposal.subject)}</span>`);
    parts.push(html`<span>proposed by ${proposal.proposedBy.name}</span>`);
  }
  const since = proposal ? proposal.createdAt : task.createdAt;
  parts.push(html`<span><time datetime=${since} title=${localTime(since)}>${age(since, now)}</time></span>`);
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
