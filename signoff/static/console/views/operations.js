// The operations page (operators and admins): proposals by state, open incidents, the
// task backlog, and the recent incidents with the moves their state allows.

import { Badge, When, html } from "../components.js";
import { Layout } from "../nav.js";
import { ACKNOWLEDGE_INCIDENT, LOAD_OPERATIONS, RESOLVE_INCIDENT, RETRY_INCIDENT } from "../queries.js";
import { STAFF } from "../roles.js";
import { ask, focusHeading, redraw, refused, role, say, state } from "../store.js";

// An incident's moves (signoff/resolvers/lifecycles.py): acknowledge from OPEN; retry and
// resolve from OPEN or ACKNOWLEDGED; a RESOLVED one takes none of them.
const UNRESOLVED = new Set(["OPEN", "ACKNOWLEDGED"]);

let shown = null; // what the page was last drawn from: { data } or { forbidden: true }
const busy = new Set(); // incidents with a move on its way: their controls wait for it

/** Load the page and draw it; `focusIncident` keeps the keyboard on a row just worked. */
export async function showOperations(focusIncident = null) {
  state.openTask = null;
  if (!STAFF.has(role())) {
    shown = { forbidden: true };
    redraw();
    focusHeading();
    return;
  }
  let data;
  try {
    data = await ask(LOAD_OPERATIONS);
  } catch (failure) {
    refused(failure);
    return;
  }
  if (state.route.name !== "operations") return; // moved on meanwhile
  shown = { data };
  redraw();
  const row = focusIncident && document.querySelector(`[data-incident-id="${CSS.escape(focusIncident)}"]`);
  if (row) row.focus();
  else focusHeading();
}

export function OperationsView() {
  let content;
  if (!shown) content = html`<p class="loading">Loading…</p>`;
  else if (shown.forbidden) content = html`<p class="empty">The Operations page is for operators and admins.</p>`;
  else content = html`<${Overview} data=${shown.data} />`;
  return html`<${Layout}>
    <section class="work"><h2 tabindex="-1">Operations</h2>${content}</section>
  <//>`;
}

function Counts({ rows, by }) {
  return html`<ul class="counts">
    ${rows.map((r) => html`<li key=${r[by]}><${Badge} value=${r[by]} /> ${r.count}</li>`)}
  </ul>`;
}

function Overview({ data }) {
  const snapshot = data.operationsSnapshot;
  const tasks = snapshot.humanTasks;
  return html`
    <p>As of <${When} iso=${snapshot.generatedAt} /></p>
    <h3>Proposals by state</h3>
    <${Counts} rows=${snapshot.proposalsByState} by="state" />
    <h3>Open incidents</h3>
    <${Counts} rows=${snapshot.openIncidents} by="severity" />
    <h3>Tasks</h3>
    <p>${`${tasks.pending} open, ${tasks.inFlight} claimed, ${tasks.retrying} with a lapsed claim`}</p>
    <h3>Recent incidents</h3>
    ${data.incidents.nodes.length
      ? html`<ul class="incidents">
          ${data.incidents.nodes.map((incident) => html`<${IncidentRow} key=${`${incident.id}:${incident.state}`} incident=${incident} />`)}
        </ul>`
      : html`<p class="empty">No incidents.</p>`}
  `;
}

function IncidentRow({ incident }) {
  const working = busy.has(incident.id);
  return html`<li class="incident" data-incident-id=${incident.id} tabindex="-1" aria-busy=${working ? "true" : null}>
    <div class="incident-what">
      <${Badge} value=${incident.severity} />
      <${Badge} value=${incident.state} />
      <span class="incident-title">${incident.title}</span>
      <span class="count">×${incident.occurrenceCount}, last <${When} iso=${incident.lastSeenAt} /></span>
      ${incident.resolutionCode ? html`<code>${incident.resolutionCode}</code>` : null}
    </div>
    <${IncidentActions} incident=${incident} working=${working} />
  </li>`;
}

// Only the moves the incident's state allows, and only for roles that may make them. Each
// button's idempotency key is made when it is drawn, so a second press of the same button
// (before it is disabled) replays the first rather than acting twice.
function IncidentActions({ incident, working }) {
  if (!STAFF.has(role()) || !UNRESOLVED.has(incident.state)) return null;
  const incidentId = incident.id;
  const buttons = [];
  if (incident.state === "OPEN") {
    const input = { incidentId, idempotencyKey: crypto.randomUUID() };
    const acknowledge = () => workIncident(ACKNOWLEDGE_INCIDENT, input, "Acknowledged.");
    buttons.push(html`<button type="button" class="acknowledge" disabled=${working} onClick=${acknowledge}>Acknowledge</button>`);
  }
  const proposal = incident.proposal;
  if (proposal && proposal.state === "FAILED" && proposal.deliveryTerminal) {
    const input = { incidentId, idempotencyKey: crypto.randomUUID() };
    const retry = () => workIncident(RETRY_INCIDENT, input, "Retried: the delivery is queued again.");
    buttons.push(html`<button type="button" class="retry" disabled=${working} onClick=${retry}>Retry delivery</button>`);
  }
  const codeId = `resolve-code-${incidentId}`;
  const summaryId = `resolve-summary-${incidentId}`;
  const resolveKey = crypto.randomUUID();
  const resolve = (event) => {
    event.preventDefault();
    const form = event.target;
    const input = {
      incidentId,
      code: form.querySelector("input").value.trim(),
      summary: form.querySelector("textarea").value.trim(),
      idempotencyKey: resolveKey,
    };
    workIncident(RESOLVE_INCIDENT, input, "Resolved.");
  };
  return html`<div class="incident-actions">
    ${buttons.length ? html`<div class="buttons">${buttons}</div>` : null}
    <details class="resolve">
      <summary>Resolve…</summary>
      <form class="decide" onSubmit=${resolve}>
        <label for=${codeId}>Resolution code</label>
        <input id=${codeId} type="text" disabled=${working} required pattern="[a-z][a-z0-9_]{1,63}" placeholder="receiver_fixed" aria-describedby=${`${codeId}-help`} />
        <p id=${`${codeId}-help`} class="hint">2 to 64 lowercase letters, digits or underscores, starting with a letter.</p>
        <label for=${summaryId}>What was done (3 to 2,000 characters)</label>
        <textarea id=${summaryId} disabled=${working} rows="2" required minlength="3" maxlength="2000"></textarea>
        <div class="buttons"><button type="submit" class="primary" disabled=${working}>Resolve</button></div>
      </form>
    </details>
  </div>`;
}

// One move on one incident: its controls are disabled until the answer comes (no second
// submission), then the page is drawn again from the server, showing the new state or,
// after a refusal, the state as it is, under the refusal's sentence.
async function workIncident(mutation, input, done) {
  if (busy.has(input.incidentId)) return;
  busy.add(input.incidentId);
  redraw();
  try {
    await ask(mutation, { input });
    say(done, "ok");
  } catch (failure) {
    refused(failure);
  }
  // The controls wait for the page drawn from the server's answer.
  busy.delete(input.incidentId);
  if (state.token && state.route.name === "operations") await showOperations(input.incidentId);
}

/** Forget the page's data (signed out, or left): the next visit loads it afresh. */
export function leaveOperations() {
  shown = null;
  busy.clear();
}
