// The operations page (operators and admins): proposals by state, open incidents, the task
// backlog, the last day's charts, and the recent incidents with the moves their state
// allows. It stays live: a change in a queue (from the console's feed) or to an incident
// (from the incidents' feed) loads the figures again.

import { HourChart } from "../charts.js";
import { Badge, When, html } from "../components.js";
import { IncidentActions, coalesced, followIncidents, forgetMoves, throttled, working } from "../incidents.js";
import { Layout } from "../nav.js";
import { LOAD_OPERATIONS, LOAD_STATISTICS } from "../queries.js";
import { STAFF } from "../roles.js";
import { href } from "../router.js";
import { ask, focusHeading, redraw, refused, role, state } from "../store.js";

let shown = null; // what the page was last drawn from: { data, statistics } or { forbidden: true }
let stopFollowing = null;
const STATISTICS_EVERY_MS = 10_000; // the charts are hourly: a few seconds late is no loss
const reloadCounts = coalesced(() => load());
const reloadStatistics = throttled(() => loadStatistics(), STATISTICS_EVERY_MS);

function reload() {
  reloadCounts();
  reloadStatistics();
}

/** Load the page and draw it; `focusIncident` keeps the keyboard on a row just worked. */
export async function showOperations(focusIncident = null) {
  state.openTask = null;
  if (!STAFF.has(role())) {
    shown = { forbidden: true };
    redraw();
    focusHeading();
    return;
  }
  if (!(await load())) return;
  const row = focusIncident && document.querySelector(`[data-incident-id="${CSS.escape(focusIncident)}"]`);
  if (row) row.focus();
  else focusHeading();
}

/** Read the counts (and the charts' figures the first time) and draw them; false when
 * the page is no longer wanted (or refused). */
async function load() {
  let data;
  let statistics = shown && shown.statistics;
  try {
    if (statistics) data = await ask(LOAD_OPERATIONS);
    else [data, { operationsStatistics: statistics }] = await Promise.all([ask(LOAD_OPERATIONS), ask(LOAD_STATISTICS)]);
  } catch (failure) {
    refused(failure);
    return false;
  }
  if (state.route.name !== "operations") return false; // moved on meanwhile
  shown = { data, statistics };
  // Incidents are followed from the cursor of the first load; queue events come through
  // the console's own feed (`operationsEvent`).
  if (!stopFollowing) stopFollowing = followIncidents(data.changeFeedCursor, reload);
  redraw();
  return true;
}

async function loadStatistics() {
  let statistics;
  try {
    statistics = (await ask(LOAD_STATISTICS)).operationsStatistics;
  } catch (failure) {
    refused(failure);
    return;
  }
  if (state.route.name !== "operations" || !shown || !shown.data) return;
  shown = { ...shown, statistics };
  redraw();
}

/** A change in one of the queues: the figures it moves are loaded again. */
export function operationsEvent() {
  if (shown && shown.data) reload();
}

export function OperationsView() {
  let content;
  if (!shown) content = html`<p class="loading">Loading…</p>`;
  else if (shown.forbidden) content = html`<p class="empty">The Operations page is for operators and admins.</p>`;
  else content = html`<${Overview} data=${shown.data} statistics=${shown.statistics} />`;
  return html`<${Layout}>
    <section class="work"><h2 tabindex="-1">Operations</h2>${content}</section>
  <//>`;
}

function Counts({ rows, by, label }) {
  return html`<ul class="counts" aria-label=${label}>
    ${rows.map((r) => html`<li key=${r[by]} data-key=${r[by]}><${Badge} value=${r[by]} /> <span class="number">${r.count}</span></li>`)}
  </ul>`;
}

function Overview({ data, statistics }) {
  const snapshot = data.operationsSnapshot;
  const tasks = snapshot.humanTasks;
  return html`
    <p>As of <${When} iso=${snapshot.generatedAt} /> · updates live</p>
    <h3>Proposals by state</h3>
    <${Counts} rows=${snapshot.proposalsByState} by="state" label="Proposals by state" />
    <h3>Open incidents</h3>
    <${Counts} rows=${snapshot.openIncidents} by="severity" label="Open incidents by severity" />
    <h3>Tasks</h3>
    <p class="tasks-backlog">${`${tasks.pending} open, ${tasks.inFlight} claimed, ${tasks.retrying} with a lapsed claim`}</p>
    <${LastDay} statistics=${statistics} />
    <h3>Recent incidents</h3>
    ${data.incidents.nodes.length
      ? html`<ul class="incidents">
          ${data.incidents.nodes.map((incident) => html`<${IncidentRow} key=${`${incident.id}:${incident.state}`} incident=${incident} />`)}
        </ul>`
      : html`<p class="empty">No incidents.</p>`}
  `;
}

function seconds(value) {
  return value === null ? null : Math.round(value * 10) / 10;
}

function LastDay({ statistics }) {
  const { hours, timeToDecision: overall } = statistics;
  const decidedIn = overall.count
    ? `${overall.count} decided; half within ${seconds(overall.p50Seconds)} s, 90% within ${seconds(overall.p90Seconds)} s, 99% within ${seconds(overall.p99Seconds)} s.`
    : "Nothing decided.";
  return html`<section class="last-day" aria-labelledby="last-day">
    <h3 id="last-day">The last 24 hours</h3>
    <p>${decidedIn}</p>
    <div class="charts">
      <${HourChart}
        id="chart-throughput"
        title="Proposals per hour"
        unit="proposals"
        hours=${hours}
        series=${[
          { label: "Decided", value: (h) => h.decided, colour: "#0b57a4", swatch: "swatch-blue" },
          { label: "Applied", value: (h) => h.applied, colour: "#11643a", swatch: "swatch-green", dash: [6, 3] },
        ]}
      />
      <${HourChart}
        id="chart-decision-time"
        title="Time to decision"
        unit="seconds"
        hours=${hours}
        series=${[
          { label: "p50", value: (h) => seconds(h.timeToDecision.p50Seconds), colour: "#0b57a4", swatch: "swatch-blue" },
          { label: "p90", value: (h) => seconds(h.timeToDecision.p90Seconds), colour: "#a35200", swatch: "swatch-orange", dash: [6, 3] },
          { label: "p99", value: (h) => seconds(h.timeToDecision.p99Seconds), colour: "#a3201c", swatch: "swatch-red", dash: [2, 3] },
        ]}
      />
      <${HourChart}
        id="chart-incidents"
        title="Open incidents"
        unit="incidents"
        hours=${hours}
        series=${[{ label: "Open at the hour's end", value: (h) => h.openIncidents, colour: "#a3201c", swatch: "swatch-red" }]}
      />
    </div>
  </section>`;
}

function IncidentRow({ incident }) {
  return html`<li class="incident" data-incident-id=${incident.id} tabindex="-1" aria-busy=${working(incident.id) ? "true" : null}>
    <div class="incident-what">
      <${Badge} value=${incident.severity} />
      <${Badge} value=${incident.state} />
      <a class="incident-title" href=${href("incident", { id: incident.id })}>${incident.title}</a>
      <span class="count">×${incident.occurrenceCount}, last <${When} iso=${incident.lastSeenAt} /></span>
      ${incident.resolutionCode ? html`<code>${incident.resolutionCode}</code>` : null}
    </div>
    <${IncidentActions} incident=${incident} after=${showOperationsIfShown} />
  </li>`;
}

async function showOperationsIfShown(incidentId) {
  if (state.route.name === "operations") await showOperations(incidentId);
}

/** Forget the page (signed out, or left): stop following, the next visit loads afresh. */
export function leaveOperations() {
  shown = null;
  reloadCounts.cancel();
  reloadStatistics.cancel();
  if (stopFollowing) stopFollowing();
  stopFollowing = null;
  forgetMoves();
}
