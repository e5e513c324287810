// Admin: a queue's notification channels. Add one of each kind the API offers (a
// webhook's signing secret is shown once), disable and enable one, remove one for good.

import { useState } from "../../vendor/preact-htm.module.js";
import { Badge, When, html } from "../components.js";
import {
  ADD_CHANNEL,
  ADMIN_CHANNELS,
  DISABLE_CHANNEL,
  ENABLE_CHANNEL,
  REMOVE_CHANNEL,
} from "../admin-queries.js";
import { href } from "../router.js";
import { ShownOnce } from "./admin-tokens.js";

export function load(ask) {
  return ask(ADMIN_CHANNELS);
}

export function Screen({ data, act, busy, revealed, query }) {
  if (!data.queues.length) return html`<p class="empty">No queues yet: channels belong to a queue.</p>`;
  const queue = data.queues.find((q) => q.id === query.get("queue")) || data.queues[0];
  return html`
    <nav aria-label="Queue of the channels" class="picker">
      ${data.queues.map(
        (q) => html`<a key=${q.id} href=${href("admin", { screen: "channels" }, new URLSearchParams({ queue: q.id }))} aria-current=${q.id === queue.id ? "page" : null}>${q.name}</a>`,
      )}
    </nav>
    ${revealed ? html`<${ShownOnce} revealed=${revealed} />` : null}
    <h3>Channels of ${queue.name}</h3>
    ${queue.notificationChannels.length
      ? html`<ul class="admin-list">
          ${queue.notificationChannels.map((channel) => html`<${ChannelItem} key=${channel.id} channel=${channel} act=${act} busy=${busy} />`)}
        </ul>`
      : html`<p class="empty">No channels: nothing is sent when tasks arrive.</p>`}
    <${AddChannel} queue=${queue} act=${act} busy=${busy} />
  `;
}

function ChannelItem({ channel, act, busy }) {
  const input = { channelId: channel.id };
  const toggle = channel.disabled
    ? () => act(ENABLE_CHANNEL, input, "The channel gets notifications again.")
    : () => act(DISABLE_CHANNEL, input, "The channel is disabled: it gets no notifications.");
  const remove = () => act(REMOVE_CHANNEL, input, "The channel is removed.");
  return html`<li class="admin-item" data-channel-id=${channel.id}>
    <div class="task-meta">
      <${Badge} value=${channel.kind} />
      <${Badge} value=${channel.disabled ? "DISABLED" : "ENABLED"} />
      <span>added <${When} iso=${channel.createdAt} /></span>
    </div>
    <p><code>${channel.url}</code></p>
    <div class="buttons">
      <button type="button" disabled=${busy} onClick=${toggle}>${channel.disabled ? "Enable" : "Disable"}</button>
      <button type="button" class="danger" disabled=${busy} onClick=${remove}>Remove</button>
    </div>
  </li>`;
}

// Each kind, its words, and the field that says where it sends (the API takes exactly
// that one: url, slackChannel or emailAddress).
const KINDS = [
  { kind: "WEBHOOK", words: "Webhook (signed JSON)", field: "url", label: "URL", type: "url" },
  { kind: "SLACK", words: "Slack incoming webhook", field: "url", label: "URL", type: "url" },
  {
    kind: "SLACK_APP",
    words: "Slack app (Approve and Reject in Slack)",
    field: "slackChannel",
    label: "Slack channel id (C…)",
    type: "text",
  },
  { kind: "EMAIL", words: "Email to one reviewer", field: "emailAddress", label: "Mail address", type: "email" },
];

function AddChannel({ queue, act, busy }) {
  const [kind, setKind] = useState("WEBHOOK");
  const chosen = KINDS.find((k) => k.kind === kind);
  const reviewers = queue.members.filter((member) => member.role === "REVIEWER");
  const add = (event) => {
    event.preventDefault();
    const form = event.target.elements;
    const input = { queueId: queue.id, kind, includePayload: form.payload.checked };
    input[chosen.field] = form.where.value.trim();
    if (kind === "EMAIL") {
      input.reviewerId = form.reviewer.value || null;
      input.approvalLinkTtlSeconds = Math.round(Number(form.linkHours.value) * 3600);
    }
    const reveal = (answer) =>
      answer.addNotificationChannel.signingSecret
        ? { title: "The new webhook's signing secret", value: answer.addNotificationChannel.signingSecret }
        : null;
    act(ADD_CHANNEL, input, `Channel added to ${queue.name}.`, reveal);
  };
  return html`<form class="admin-form" onSubmit=${add} aria-labelledby="new-channel">
    <h3 id="new-channel">New channel for ${queue.name}</h3>
    <label for="channel-kind">Kind</label>
    <select id="channel-kind" name="kind" disabled=${busy} value=${kind} onChange=${(e) => setKind(e.target.value)}>
      ${KINDS.map((k) => html`<option key=${k.kind} value=${k.kind}>${k.words}</option>`)}
    </select>
    <label for="channel-where">${chosen.label}</label>
    <input id="channel-where" name="where" type=${chosen.type} required disabled=${busy} />
    ${kind === "EMAIL"
      ? html`
          <label for="channel-reviewer">Reviewer it mails (their approval links)</label>
          <select id="channel-reviewer" name="reviewer" required disabled=${busy}>
            ${reviewers.map((r) => html`<option key=${r.id} value=${r.id}>${r.name}</option>`)}
          </select>
          <label for="channel-link-hours">Approval links valid for (hours)</label>
          <input id="channel-link-hours" name="linkHours" type="number" min="0.1" max="72" step="0.1" value="24" required disabled=${busy} />
        `
      : null}
    <label class="check"><input type="checkbox" name="payload" disabled=${busy} /> Include the proposal's payload</label>
    <div class="buttons"><button type="submit" class="primary" disabled=${busy}>Add channel</button></div>
  </form>`;
}
