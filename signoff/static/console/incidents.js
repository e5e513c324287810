// What the Operations page and the incident page share: an incident's moves (acknowledge,
// retry, resolve: the API's own mutations) and following the incidents' live feed.

import { html } from "./components.js";
import { ACKNOWLEDGE_INCIDENT, INCIDENT_EVENTS, RESOLVE_INCIDENT, RETRY_INCIDENT } from "./queries.js";
import { STAFF } from "./roles.js";
import { ask, redraw, refused, role, say, state } from "./store.js";

// An incident's moves (signoff/resolvers/core/lifecycles.py): acknowledge from OPEN; retry
// and resolve from OPEN or ACKNOWLEDGED; a RESOLVED one takes none of them.
export const UNRESOLVED = new Set(["OPEN", "ACKNOWLEDGED"]);

const busy = new Set(); // incidents with a move on its way: their controls wait for it

export function working(incidentId) {
  return busy.has(incidentId);
}

// Only the moves the incident's state allows, and only for roles that may make them. Each
// button's idempotency key is made when it is drawn, so a second press of the same button
// (before it is disabled) replays the first rather than acting twice. `after(incidentId)`
// draws the page again from the server once a move is answered.
export function IncidentActions({ incident, after }) {
  if (!STAFF.has(role()) || !UNRESOLVED.has(incident.state)) return null;
  const incidentId = incident.id;
  const waiting = working(incidentId);
  const move = (mutation, input, done) => workIncident(mutation, input, done, after);
  const buttons = [];
  if (incident.state === "OPEN") {
    const input = { incidentId, idempotencyKey: crypto.randomUUID() };
    const acknowledge = () => move(ACKNOWLEDGE_INCIDENT, input, "Acknowledged.");
    buttons.push(html`<button type="button" class="acknowledge" disabled=${waiting} onClick=${acknowledge}>Acknowledge</button>`);
  }
  const proposal = incident.proposal;
  if (proposal && proposal.state === "FAILED" && proposal.deliveryTerminal) {
    const input = { incidentId, idempotencyKey: crypto.randomUUID() };
    const retry = () => move(RETRY_INCIDENT, input, "Retried: the delivery is queued again.");
    buttons.push(html`<button type="button" class="retry" disabled=${waiting} onClick=${retry}>Retry delivery</button>`);
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
    move(RESOLVE_INCIDENT, input, "Resolved.");
  };
  return html`<div class="incident-actions">
    ${buttons.length ? html`<div class="buttons">${buttons}</div>` : null}
    <details class="resolve">
      <summary>Resolve…</summary>
      <form class="decide" onSubmit=${resolve}>
        <label for=${codeId}>Resolution code</label>
        <input id=${codeId} type="text" disabled=${waiting} required pattern="[a-z][a-z0-9_]{1,63}" placeholder="receiver_fixed" aria-describedby=${`${codeId}-help`} />
        <p id=${`${codeId}-help`} class="hint">2 to 64 lowercase letters, digits or underscores, starting with a letter.</p>
        <label for=${summaryId}>What was done (3 to 2,000 characters)</label>
        <textarea id=${summaryId} disabled=${waiting} rows="2" required minlength="3" maxlength="2000"></textarea>
        <div class="buttons"><button type="submit" class="primary" disabled=${waiting}>Resolve</button></div>
      </form>
    </details>
  </div>`;
}

// One move on one incident: its controls are disabled until the answer comes (no second
// submission), then the page is drawn again from the server, showing the new state or,
// after a refusal, the state as it is, under the refusal's sentence.
async function workIncident(mutation, input, done, after) {
  if (busy.has(input.incidentId)) return;
  busy.add(input.incidentId);
  redraw();
  try {
    await ask(mutation, { input });
    say(done, "ok");
  } catch (failure) {
    refused(failure);
  }
  busy.delete(input.incidentId);
  if (state.token) await after(input.incidentId);
}

/** Forget the moves on their way (signed out, or the page left). */
export function forgetMoves() {
  busy.clear();
}

const FOLLOW_AFTER_MS = 250; // a burst of events (a retry moves several rows) loads once

/** Follow the incidents' feed from `cursor`, calling `changed(event)` for each event;
 * returns what stops it. */
export function followIncidents(cursor, changed) {
  if (!state.live) return () => {};
  return state.live.subscribe(
    INCIDENT_EVENTS,
    { after: cursor },
    { next: changed, error: refused },
    (event) => event && event.cursor,
  );
}

/** A function that calls `load()` once, shortly after the last of a burst of calls. */
export function coalesced(load) {
  let timer = null;
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      load();
    }, FOLLOW_AFTER_MS);
  };
  schedule.cancel = () => clearTimeout(timer);
  return schedule;
}

/** Like `coalesced`, but `load()` runs at most once every `ms`: calls meanwhile wait. */
export function throttled(load, ms) {
  let timer = null;
  let last = 0;
  const schedule = () => {
    if (timer) return; // the load to come will read what this call is about
    const wait = Math.max(FOLLOW_AFTER_MS, last + ms - Date.now());
    timer = setTimeout(() => {
      timer = null;
      last = Date.now();
      load();
    }, wait);
  };
  schedule.cancel = () => {
    clearTimeout(timer);
    timer = null;
  };
  return schedule;
}
