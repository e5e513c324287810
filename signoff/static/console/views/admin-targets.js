// Admin: targets, with the controls their state allows: pause and resume deliveries, set
// their limits, close an open circuit once the receiver is fixed, retire for good.

import { Badge, When, html } from "../components.js";
import {
  ADMIN_TARGETS,
  CLOSE_TARGET_CIRCUIT,
  PAUSE_TARGET,
  RESUME_TARGET,
  RETIRE_TARGET,
  SET_TARGET_LIMITS,
} from "../admin-queries.js";

export function load(ask) {
  return ask(ADMIN_TARGETS);
}

export function Screen({ data, act, busy }) {
  if (!data.targets.length) return html`<p class="empty">No targets registered.</p>`;
  return html`<ul class="admin-list">
    ${data.targets.map((target) => html`<${TargetItem} key=${target.id} target=${target} act=${act} busy=${busy} />`)}
  </ul>`;
}

function TargetItem({ target, act, busy }) {
  const retired = Boolean(target.retiredAt);
  return html`<li class="admin-item" data-target-id=${target.id}>
    <h3>${target.name}</h3>
    <div class="task-meta">
      ${retired ? html`<${Badge} value="RETIRED" />` : html`<${Badge} value=${target.pausedAt ? "PAUSED" : "DELIVERING"} />`}
      <span>circuit <${Badge} value=${target.circuitState} /></span>
      ${target.queue ? html`<span>queue ${target.queue.name}</span>` : null}
    </div>
    <dl class="facts">
      <dt>Delivers to</dt><dd>${target.url ? html`<code>${target.url}</code>` : "its agents execute"}</dd>
      <dt>In flight at most</dt><dd>${target.maxConcurrency}</dd>
      <dt>Starts per second</dt><dd>${target.ratePerSecond ?? "no limit"}</dd>
      ${target.pausedAt ? html`<dt>Paused</dt><dd><${When} iso=${target.pausedAt} /></dd>` : null}
      ${target.lastError ? html`<dt>Last error</dt><dd>${target.lastError} (${target.consecutiveFailures} failures in a row)</dd>` : null}
      ${retired ? html`<dt>Retired</dt><dd><${When} iso=${target.retiredAt} /></dd>` : null}
    </dl>
    ${retired ? null : html`<${TargetControls} target=${target} act=${act} busy=${busy} />`}
  </li>`;
}

// Each form's idempotency key is made when it is drawn: a second press before the answer
// replays the first instead of acting twice.
function TargetControls({ target, act, busy }) {
  const targetId = target.id;
  const id = (what) => `${what}-${targetId}`;
  const withReason = (mutation, done) => (event) => {
    event.preventDefault();
    const reason = event.target.elements.reason.value.trim();
    act(mutation, { targetId, reason, idempotencyKey: crypto.randomUUID() }, done);
  };
  const resume = () => act(RESUME_TARGET, { targetId, idempotencyKey: crypto.randomUUID() }, `${target.name} delivers again.`);
  const limits = (event) => {
    event.preventDefault();
    const form = event.target.elements;
    const rate = form.rate.value.trim();
    const input = { targetId, maxConcurrency: Number(form.concurrency.value), idempotencyKey: crypto.randomUUID() };
    if (rate) input.ratePerSecond = Number(rate);
    else input.clearRate = true;
    act(SET_TARGET_LIMITS, input, `${target.name}'s limits are set.`);
  };
  const retire = () => act(RETIRE_TARGET, { targetId }, `${target.name} is retired: it takes no new proposals.`);
  return html`<div class="admin-controls">
    ${target.pausedAt
      ? html`<div class="buttons"><button type="button" class="primary" disabled=${busy} onClick=${resume}>Resume</button></div>`
      : html`<form class="inline-form" onSubmit=${withReason(PAUSE_TARGET, `${target.name} is paused: its proposals wait.`)}>
          <label for=${id("pause-reason")}>Reason to pause</label>
          <input id=${id("pause-reason")} name="reason" type="text" required maxlength="500" disabled=${busy} />
          <button type="submit" disabled=${busy}>Pause</button>
        </form>`}
    ${target.circuitState !== "CLOSED"
      ? html`<form class="inline-form" onSubmit=${withReason(CLOSE_TARGET_CIRCUIT, `${target.name}'s circuit is closed.`)}>
          <label for=${id("circuit-reason")}>What was fixed</label>
          <input id=${id("circuit-reason")} name="reason" type="text" required maxlength="500" disabled=${busy} />
          <button type="submit" disabled=${busy}>Close circuit</button>
        </form>`
      : null}
    <details>
      <summary>Limits…</summary>
      <form class="inline-form" onSubmit=${limits}>
        <label for=${id("concurrency")}>In flight at most</label>
        <input id=${id("concurrency")} name="concurrency" type="number" min="1" required value=${target.maxConcurrency} disabled=${busy} />
        <label for=${id("rate")}>Starts per second (empty: no limit)</label>
        <input id=${id("rate")} name="rate" type="number" min="0" step="any" value=${target.ratePerSecond ?? ""} disabled=${busy} />
        <button type="submit" disabled=${busy}>Set limits</button>
      </form>
    </details>
    <details>
      <summary>Retire…</summary>
      <p class="hint">A retired target takes no new proposals, for good.</p>
      <button type="button" class="danger" disabled=${busy} onClick=${retire}>Retire ${target.name}</button>
    </details>
  </div>`;
}
