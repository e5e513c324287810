// Admin: API tokens. Create one (its value is shown here once: the server keeps only its
// hash) and revoke one by its id; the list shows who each token stands for, never a value.

import { When, html } from "../components.js";
import { ADMIN_TOKENS, CREATE_TOKEN, REVOKE_TOKEN } from "../admin-queries.js";

const ROLES = ["REVIEWER", "OPERATOR", "AGENT", "INTEGRATION", "ADMIN"];

export function load(ask) {
  return ask(ADMIN_TOKENS);
}

export function Screen({ data, act, busy, revealed }) {
  const create = (event) => {
    event.preventDefault();
    const form = event.target.elements;
    const queueSlugs = data.queues.filter((q) => form[`token-queue-${q.id}`].checked).map((q) => q.slug);
    const input = { name: form.name.value.trim(), role: form.role.value, queueSlugs };
    const reveal = (answer) => ({
      title: `The new token of ${answer.createToken.apiToken.actor.name}`,
      value: answer.createToken.token,
    });
    act(CREATE_TOKEN, input, "Token created. Copy it now: it is not shown again.", reveal);
  };
  const revoke = (token) => act(REVOKE_TOKEN, { tokenId: token.id }, `The token of ${token.actor.name} is revoked.`);
  return html`
    ${revealed ? html`<${ShownOnce} revealed=${revealed} />` : null}
    ${data.tokens.length
      ? html`<ul class="admin-list" aria-label="Live tokens, newest first">
          ${data.tokens.map(
            (token) => html`<li key=${token.id} class="admin-item token" data-token-id=${token.id}>
              <span><strong>${token.actor.name}</strong> · ${token.actor.role.toLowerCase()} · created <${When} iso=${token.createdAt} /></span>
              <button type="button" class="danger" disabled=${busy} onClick=${() => revoke(token)} aria-label=${`Revoke a token of ${token.actor.name}`}>Revoke</button>
            </li>`,
          )}
        </ul>`
      : html`<p class="empty">No live tokens.</p>`}
    <form class="admin-form" onSubmit=${create} aria-labelledby="new-token">
      <h3 id="new-token">New token</h3>
      <label for="token-name">Actor's name</label>
      <input id="token-name" name="name" type="text" required maxlength="200" aria-describedby="token-name-help" disabled=${busy} />
      <p id="token-name-help" class="hint">An existing actor gets another token and keeps its role; a new one is made with the role below.</p>
      <label for="token-role">Role</label>
      <select id="token-role" name="role" disabled=${busy}>
        ${ROLES.map((r) => html`<option key=${r} value=${r}>${r.toLowerCase()}</option>`)}
      </select>
      ${data.queues.length
        ? html`<fieldset>
            <legend>Queues it reviews (reviewers)</legend>
            ${data.queues.map(
              (q) => html`<label key=${q.id} class="check"><input type="checkbox" name=${`token-queue-${q.id}`} disabled=${busy} /> ${q.name}</label>`,
            )}
          </fieldset>`
        : null}
      <div class="buttons"><button type="submit" class="primary" disabled=${busy}>Create token</button></div>
    </form>
  `;
}

/** A secret the server answered once: shown until the reader leaves the screen. */
export function ShownOnce({ revealed }) {
  return html`<section class="shown-once" aria-labelledby="shown-once-title">
    <h3 id="shown-once-title">${revealed.title}</h3>
    <p>Shown only now: copy it somewhere safe. Signoff keeps no copy it could show again.</p>
    <output class="secret" aria-label=${revealed.title}><code>${revealed.value}</code></output>
  </section>`;
}
