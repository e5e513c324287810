// Admin: queues and their members. Create a queue; add a reviewer to one, or take one off
// (addQueueMember, removeQueueMember: only reviewers are members).

import { html } from "../components.js";
import { ADD_MEMBER, ADMIN_QUEUES, CREATE_QUEUE, REMOVE_MEMBER } from "../admin-queries.js";

export function load(ask) {
  return ask(ADMIN_QUEUES);
}

export function Screen({ data, act, busy }) {
  const create = (event) => {
    event.preventDefault();
    const form = event.target.elements;
    const input = { slug: form.slug.value.trim(), name: form.name.value.trim() };
    act(CREATE_QUEUE, input, `Queue ${input.name} created.`);
  };
  return html`
    ${data.queues.length
      ? html`<ul class="admin-list">
          ${data.queues.map((queue) => html`<${QueueItem} key=${queue.id} queue=${queue} reviewers=${data.reviewers.nodes} act=${act} busy=${busy} />`)}
        </ul>`
      : html`<p class="empty">No queues yet.</p>`}
    <form class="admin-form" onSubmit=${create} aria-labelledby="new-queue">
      <h3 id="new-queue">New queue</h3>
      <label for="queue-slug">Slug</label>
      <input id="queue-slug" name="slug" type="text" required pattern="[a-z0-9][a-z0-9\\-]{0,62}" aria-describedby="queue-slug-help" disabled=${busy} />
      <p id="queue-slug-help" class="hint">Lowercase letters, digits and hyphens, as in payments-eu.</p>
      <label for="queue-name">Name</label>
      <input id="queue-name" name="name" type="text" required maxlength="200" disabled=${busy} />
      <div class="buttons"><button type="submit" class="primary" disabled=${busy}>Create queue</button></div>
    </form>
  `;
}

function QueueItem({ queue, reviewers, act, busy }) {
  const memberIds = new Set(queue.members.map((m) => m.id));
  const candidates = reviewers.filter((r) => !memberIds.has(r.id));
  const pickId = `add-member-${queue.id}`;
  const add = (event) => {
    event.preventDefault();
    const select = event.target.elements.actor;
    const name = select.options[select.selectedIndex].text;
    act(ADD_MEMBER, { queueId: queue.id, actorId: select.value }, `${name} now reviews ${queue.name}.`);
  };
  const remove = (member) =>
    act(REMOVE_MEMBER, { queueId: queue.id, actorId: member.id }, `${member.name} no longer reviews ${queue.name}.`);
  return html`<li class="admin-item" data-queue-id=${queue.id}>
    <h3>${queue.name} <code class="count">${queue.slug}</code></h3>
    ${queue.members.length
      ? html`<ul class="members" aria-label=${`Members of ${queue.name}`}>
          ${queue.members.map(
            (member) => html`<li key=${member.id}>
              <span>${member.name}</span>
              <button type="button" disabled=${busy} onClick=${() => remove(member)} aria-label=${`Remove ${member.name} from ${queue.name}`}>Remove</button>
            </li>`,
          )}
        </ul>`
      : html`<p class="empty">No members.</p>`}
    ${candidates.length
      ? html`<form class="inline-form" onSubmit=${add}>
          <label for=${pickId}>Add a reviewer</label>
          <select id=${pickId} name="actor" disabled=${busy}>
            ${candidates.map((r) => html`<option key=${r.id} value=${r.id}>${r.name}</option>`)}
          </select>
          <button type="submit" disabled=${busy}>Add</button>
        </form>`
      : null}
  </li>`;
}
