// One incident (operators and admins), at its own address (#/incident/<id>): what it is,
// the moves its state allows, the proposal and the target it concerns, and its timeline
// from the audit records. It follows the incidents' feed, and its proposal's events from
// the console's feed, so what it shows stays current.

import { Badge, When, html } from "../components.js";
import { inline } from "../format.js";
import { IncidentActions, coalesced, followIncidents, forgetMoves } from "../incidents.js";
import { Layout } from "../nav.js";
import { LOAD_INCIDENT } from "../queries.js";
import { STAFF } from "../roles.js";
import { href } from "../router.js";
import { ask, focusHeading, redraw, refused, role, state } from "../store.js";

let shown = null; // { id, incident } or { forbidden: true } or { id, missing: message }
let stopFollowing = null;
const reload = coalesced(() => shown && shown.id && load(shown.id));

/** Open the incident `id`'s page. */
export async function showIncident(id) {
  state.openTask = null;
  if (!STAFF.has(role())) {
    shown = { forbidden: true };
    redraw();
    focusHeading();
    return;
  }
  if (!shown || shown.id !== id) leaveIncident();
  shown = { id };
  redraw();
  await load(id);
  focusHeading();
}

async function load(id) {
  let data;
  try {
    data = await ask(LOAD_INCIDENT, { id });
  } catch (failure) {
    if (state.route.name !== "incident" || state.route.params.id !== id) return;
    refused(failure);
    shown = { id, missing: "This incident could not be read." };
    redraw();
    return;
  }
  if (state.route.name !== "incident" || state.route.params.id !== id) return; // moved on
  shown = { id, incident: data.incident };
  if (!stopFollowing) {
    stopFollowing = followIncidents(data.changeFeedCursor, (event) => {
      if (event.entityId === id) reload();
    });
  }
  redraw();
}

/** A change in one of the queues: the page loads again if it is about its proposal. */
export function incidentEvent(event) {
  const proposal = shown && shown.incident && shown.incident.proposal;
  if (proposal && (event.proposalId === proposal.id || event.entityId === proposal.id)) reload();
}

export function IncidentView() {
  let content;
  if (!shown || (!shown.incident && !shown.missing && !shown.forbidden)) {
    content = html`<h2 tabindex="-1">Incident</h2><p class="loading">Loading…</p>`;
  } else if (shown.forbidden) {
    content = html`<h2 tabindex="-1">Incident</h2><p class="empty">Incidents are for operators and admins.</p>`;
  } else if (shown.missing) {
    content = html`<h2 tabindex="-1">Incident</h2><p class="empty">${shown.missing}</p>`;
  } else {
    content = html`<${Incident} incident=${shown.incident} />`;
  }
  return html`<${Layout}>
    <section class="work incident-page">
      <p class="back"><a href=${href("operations")}>← Operations</a></p>
      ${content}
    </section>
  <//>`;
}

function Incident({ incident }) {
  return html`
    <h2 tabindex="-1">${incident.title}</h2>
    <p class="incident-what">
      <${Badge} value=${incident.severity} /> <${Badge} value=${incident.state} />
      <span class="count">${incident.category}</span>
    </p>
    <dl class="facts">
      <dt>Occurrences</dt><dd>${incident.occurrenceCount}</dd>
      <dt>First seen</dt><dd><${When} iso=${incident.firstSeenAt} /></dd>
      <dt>Last seen</dt><dd><${When} iso=${incident.lastSeenAt} /></dd>
      ${incident.lastErrorCode ? html`<dt>Last error</dt><dd><code>${incident.lastErrorCode}</code></dd>` : null}
      ${incident.summary ? html`<dt>Summary</dt><dd>${incident.summary}</dd>` : null}
      ${incident.acknowledgedAt ? html`<dt>Acknowledged</dt><dd><${When} iso=${incident.acknowledgedAt} /></dd>` : null}
      ${incident.resolvedAt
        ? html`<dt>Resolved</dt>
            <dd class="resolution"><${When} iso=${incident.resolvedAt} />: <code>${incident.resolutionCode}</code> ${incident.resolutionSummary}</dd>`
        : null}
    </dl>
    <div class="actions"><${IncidentActions} incident=${incident} after=${reloadNow} /></div>
    <div class="concerns">
      <${ProposalPart} proposal=${incident.proposal} />
      <${TargetPart} target=${incident.target} />
    </div>
    <${Timeline} events=${incident.auditTrail} />
  `;
}

async function reloadNow(incidentId) {
  if (state.route.name === "incident" && state.route.params.id === incidentId) await load(incidentId);
}

function ProposalPart({ proposal }) {
  if (!proposal) return html`<section class="proposal-part"><h3>Proposal</h3><p class="empty">It concerns no proposal.</p></section>`;
  const task = proposal.task;
  return html`<section class="proposal-part" aria-labelledby="incident-proposal">
    <h3 id="incident-proposal">Proposal</h3>
    <dl class="facts">
      <dt>Action</dt><dd><code>${proposal.actionCode}</code></dd>
      <dt>State</dt><dd><${Badge} value=${proposal.state} />${proposal.deliveryTerminal ? " (delivery given up)" : null}</dd>
      <dt>Subject</dt><dd>${inline(proposal.subject)}</dd>
      <dt>Attempts</dt><dd>${proposal.deliveryAttemptCount}</dd>
      ${proposal.lastErrorCode ? html`<dt>Last error</dt><dd><code>${proposal.lastErrorCode}</code></dd>` : null}
      <dt>Proposed</dt><dd><${When} iso=${proposal.createdAt} /></dd>
      ${proposal.decidedAt ? html`<dt>Decided</dt><dd><${When} iso=${proposal.decidedAt} /></dd>` : null}
      ${proposal.appliedAt ? html`<dt>Applied</dt><dd><${When} iso=${proposal.appliedAt} /></dd>` : null}
      <dt>Id</dt><dd><code>${proposal.id}</code></dd>
    </dl>
    ${task ? html`<p><a href=${href("task", { id: task.id })}>Open its approval task</a></p>` : null}
  </section>`;
}

function TargetPart({ target }) {
  if (!target) return html`<section class="target-part"><h3>Target</h3><p class="empty">It concerns no target.</p></section>`;
  return html`<section class="target-part" aria-labelledby="incident-target">
    <h3 id="incident-target">Target</h3>
    <dl class="facts">
      <dt>Name</dt><dd class="target-name">${target.name}</dd>
      <dt>Circuit</dt><dd><${Badge} value=${target.circuitState} /></dd>
      <dt>Failures in a row</dt><dd>${target.consecutiveFailures}</dd>
      ${target.lastError ? html`<dt>Last error</dt><dd>${target.lastError}</dd>` : null}
      ${target.pausedAt ? html`<dt>Paused</dt><dd><${When} iso=${target.pausedAt} /></dd>` : null}
      ${target.retiredAt ? html`<dt>Retired</dt><dd><${When} iso=${target.retiredAt} /></dd>` : null}
    </dl>
  </section>`;
}

// "incident.opened" reads "Incident opened"; "proposal.dead_lettered": "Proposal dead lettered".
function words(action) {
  const text = action.replace(/[._]/g, " ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function Timeline({ events }) {
  return html`<section class="timeline-part" aria-labelledby="incident-timeline">
    <h3 id="incident-timeline">Timeline</h3>
    ${events.length
      ? html`<ol class="timeline">
          ${events.map(
            (event) => html`<li key=${event.id} data-action=${event.action}>
              <${When} iso=${event.createdAt} />
              <span class="timeline-what">${words(event.action)}</span>
              <span class="count">${event.actor ? `by ${event.actor.name}` : "by Signoff"}</span>
              ${Object.keys(event.details || {}).length ? html`<div class="timeline-details">${inline(event.details)}</div>` : null}
            </li>`,
          )}
        </ol>`
      : html`<p class="empty">No audit records yet.</p>`}
  </section>`;
}

/** Forget the page (signed out, or left): stop following, the next visit loads afresh. */
export function leaveIncident() {
  shown = null;
  reload.cancel();
  if (stopFollowing) stopFollowing();
  stopFollowing = null;
  forgetMoves();
}
