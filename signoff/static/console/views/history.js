// History: the proposals no longer waiting for approval (approved, applied, failed,
// rejected, expired), most recently decided first, filtered by outcome, target, agent,
// reviewer, when they were decided and words of their subject. The filters live in the
// address's query (`#/history?state=rejected&q=acme`), so a filtered list can be shared;
// each row opens the proposal's page (views/proposal.js).

import { Badge, When, html } from "../components.js";
import { inline } from "../format.js";
import { Layout } from "../nav.js";
import { LOAD_ACTORS, LOAD_HISTORY, LOAD_TARGETS } from "../queries.js";
import { STAFF } from "../roles.js";
import { go, href } from "../router.js";
import { ask, focusHeading, redraw, refused, role, state } from "../store.js";

// Outcomes in words, and the states each one stands for (signoff/models/proposal.py).
export const OUTCOMES = [
  { value: "approved", label: "Approved, not applied yet", states: ["APPROVED", "QUEUED", "APPLYING", "EXECUTING"] },
  { value: "applied", label: "Applied", states: ["APPLIED"] },
  { value: "failed", label: "Failed", states: ["FAILED", "EXECUTION_UNKNOWN"] },
  { value: "rejected", label: "Rejected", states: ["REJECTED"] },
  { value: "expired", label: "Expired", states: ["CANCELLED"] },
  { value: "compensation", label: "Compensation required", states: ["COMPENSATION_REQUIRED"] },
];

// The query's names for the filters, in the order the form shows them.
const FILTERS = ["state", "target", "agent", "reviewer", "from", "to", "q"];

let shown = null; // { query, rows, page, loadingMore } once a page has come back
let asks = 0; // history loads asked for so far: an older answer is not drawn over a newer
let options = null; // { targets, agents, reviewers } for the filters' choices
const seen = { agents: new Map(), reviewers: new Map() }; // actors met in rows (id -> name)

/** Load the history the route's query asks for, and draw it. */
export async function showHistory(query) {
  state.openTask = null;
  asks += 1;
  const asked = asks;
  shown = { query: String(query), rows: null, page: null };
  redraw();
  let data;
  try {
    if (!options) options = await loadOptions();
    data = await ask(LOAD_HISTORY, variables(query));
  } catch (failure) {
    refused(failure);
    return;
  }
  if (asked !== asks || state.route.name !== "history") return; // moved on meanwhile
  remember(data.history.nodes);
  shown = { query: String(query), rows: data.history.nodes, page: data.history.pageInfo };
  redraw();
  // A new filter leaves the keyboard on the filter; arriving puts it on the heading.
  if (!document.activeElement || !document.activeElement.closest(".history-filters")) focusHeading();
}

/** Forget what was loaded (signed out): the next visit asks again. */
export function leaveHistory() {
  shown = null;
  options = null;
  seen.agents.clear();
  seen.reviewers.clear();
}

async function loadOptions() {
  const { targets } = await ask(LOAD_TARGETS);
  if (!STAFF.has(role())) return { targets, agents: null, reviewers: null };
  const actors = await ask(LOAD_ACTORS);
  return { targets, agents: actors.agents.nodes, reviewers: actors.reviewers.nodes };
}

// The history query's variables from the address's query: a day is the reader's own
// (from its local midnight), and the "to" day is included whole.
export function variables(query, after = null) {
  const outcome = OUTCOMES.find((o) => o.value === query.get("state"));
  const day = (text, plus = 0) => {
    if (!/^\d{4}-\d{2}-\d{2}$/.test(text || "")) return null;
    const at = new Date(`${text}T00:00`);
    at.setDate(at.getDate() + plus);
    return at.toISOString();
  };
  return {
    states: outcome ? outcome.states : null,
    targetId: query.get("target") || null,
    proposedById: query.get("agent") || null,
    reviewerId: query.get("reviewer") || null,
    decidedAfter: day(query.get("from")),
    decidedBefore: day(query.get("to"), 1),
    search: (query.get("q") || "").trim() || null,
    after,
  };
}

function remember(rows) {
  for (const row of rows) {
    seen.agents.set(row.proposedBy.id, row.proposedBy.name);
    for (const approval of row.approvals) seen.reviewers.set(approval.approver.id, approval.approver.name);
  }
}

async function loadMore() {
  if (!shown || !shown.page || !shown.page.hasNextPage || shown.loadingMore) return;
  const query = new URLSearchParams(shown.query);
  shown.loadingMore = true;
  redraw();
  const asked = asks;
  let data;
  try {
    data = await ask(LOAD_HISTORY, variables(query, shown.page.endCursor));
  } catch (failure) {
    shown.loadingMore = false;
    refused(failure);
    redraw();
    return;
  }
  if (asked !== asks) return;
  remember(data.history.nodes);
  shown = { query: shown.query, rows: [...shown.rows, ...data.history.nodes], page: data.history.pageInfo };
  redraw();
}

export function HistoryView() {
  const query = shown ? new URLSearchParams(shown.query) : state.route.query;
  return html`<${Layout}>
    <section class="work history">
      <h2 tabindex="-1">History</h2>
      <${Filters} query=${query} />
      <${Results} />
    </section>
  <//>`;
}

// ---------------------------------------------------------------- the filters

function apply(event) {
  event.preventDefault();
  const form = event.target.closest("form");
  const query = new URLSearchParams();
  for (const name of FILTERS) {
    const value = form.elements[name].value.trim();
    if (value) query.set(name, value);
  }
  go(href("history", {}, query));
}

// A choice applies at once; the words apply with Enter or the button.
const applyChoice = apply;

// The actors a filter offers: all of that role for the staff (who may list actors), else
// those met in the rows so far; the viewer as "Me" where offered; the chosen one always.
function ActorSelect({ name, label, listed, met, query, offerMe }) {
  const selected = query.get(name) || "";
  const me = offerMe && state.viewer ? state.viewer.actor : null;
  const all = new Map(listed ? listed.map((actor) => [actor.id, actor.name]) : met);
  if (me) all.delete(me.id);
  if (selected && !all.has(selected) && !(me && me.id === selected)) all.set(selected, "(chosen)");
  const id = `history-${name}`;
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} name=${name} onChange=${applyChoice}>
      <option value="" selected=${!selected}>Anyone</option>
      ${me ? html`<option value=${me.id} selected=${selected === me.id}>Me (${me.name})</option>` : null}
      ${[...all].sort((a, b) => a[1].localeCompare(b[1])).map(
        ([actorId, actorName]) => html`<option value=${actorId} selected=${selected === actorId}>${actorName}</option>`,
      )}
    </select>
  </div>`;
}

// What is typed stays while the page is drawn again; a field is drawn anew (keyed by its
// value in the address) only when the address changes it.
function Filters({ query }) {
  const targets = options ? options.targets : [];
  const decides = role() === "REVIEWER" || role() === "ADMIN";
  return html`<form class="history-filters" role="search" aria-label="Filter the history" onSubmit=${apply}>
    <div class="field">
      <label for="history-state">Outcome</label>
      <select id="history-state" name="state" onChange=${applyChoice}>
        <option value="" selected=${!query.get("state")}>Any</option>
        ${OUTCOMES.map((o) => html`<option value=${o.value} selected=${query.get("state") === o.value}>${o.label}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for="history-target">Target</label>
      <select id="history-target" name="target" onChange=${applyChoice}>
        <option value="" selected=${!query.get("target")}>Any</option>
        ${targets.map((t) => html`<option value=${t.id} selected=${query.get("target") === t.id}>${t.name}</option>`)}
      </select>
    </div>
    <${ActorSelect} name="agent" label="Agent" listed=${options && options.agents} met=${seen.agents} query=${query} />
    <${ActorSelect}
      name="reviewer"
      label="Reviewer"
      listed=${options && options.reviewers}
      met=${seen.reviewers}
      query=${query}
      offerMe=${decides}
    />
    <div class="field">
      <label for="history-from">Decided from</label>
      <input id="history-from" name="from" type="date" key=${`from:${query.get("from") || ""}`} defaultValue=${query.get("from") || ""} onChange=${applyChoice} />
    </div>
    <div class="field">
      <label for="history-to">Decided until</label>
      <input id="history-to" name="to" type="date" key=${`to:${query.get("to") || ""}`} defaultValue=${query.get("to") || ""} onChange=${applyChoice} />
    </div>
    <div class="field wide">
      <label for="history-q">Subject contains</label>
      <input id="history-q" name="q" type="search" key=${`q:${query.get("q") || ""}`} defaultValue=${query.get("q") || ""} />
    </div>
    <div class="buttons">
      <button type="submit" class="primary">Search</button>
      ${[...query.keys()].length ? html`<a href=${href("history")}>Clear filters</a>` : null}
    </div>
  </form>`;
}

// ---------------------------------------------------------------- the results

function Results() {
  if (!shown || !shown.rows) return html`<p class="loading">Loading…</p>`;
  if (!shown.rows.length) return html`<p class="empty" id="history-empty">No decided proposal matches.</p>`;
  return html`
    <p class="count" id="history-count">
      ${shown.rows.length} ${shown.rows.length === 1 ? "proposal" : "proposals"}${shown.page.hasNextPage ? " so far" : ""}, most recently decided first
    </p>
    <ul class="history-rows">
      ${shown.rows.map((row) => html`<${Row} key=${row.id} row=${row} />`)}
    </ul>
    ${shown.page.hasNextPage
      ? html`<div class="buttons">
          <button type="button" id="history-more" disabled=${shown.loadingMore} onClick=${loadMore}>Show more</button>
        </div>`
      : null}
  `;
}

const DECIDED = { APPROVED: "approved", REJECTED: "rejected" };

function Row({ row }) {
  const deciders = row.approvals.map((a) => `${a.approver.name} (${DECIDED[a.decision]})`).join(", ");
  return html`<li class="history-row" data-proposal-id=${row.id}>
    <a class="history-link" href=${href("proposal", { id: row.id })}>
      <span class="history-what"><code>${row.actionCode}</code> on ${row.target.name}</span>
      <span class="history-subject">${inline(row.subject)}</span>
    </a>
    <span class="history-facts">
      <${Badge} value=${row.state} />
      <span>by ${row.proposedBy.name}</span>
      <span>${deciders ? `decided by ${deciders}` : "no reviewer decided"}</span>
      <span>decided <${When} iso=${row.decidedAt} /></span>
    </span>
  </li>`;
}
