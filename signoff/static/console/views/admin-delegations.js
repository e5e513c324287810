// Admin: who is away and who takes their tasks meanwhile (setDelegate is the reviewer's
// own; this screen reads the delegations standing now or later).

import { When, html } from "../components.js";
import { ADMIN_DELEGATIONS } from "../admin-queries.js";

export function load(ask) {
  return ask(ADMIN_DELEGATIONS);
}

export function Screen({ data }) {
  if (!data.delegations.length) return html`<p class="empty">Nobody is away: no delegation stands now or later.</p>`;
  return html`<div class="table-scroll"><table>
    <caption class="hint">Delegations standing now or later, soonest end first</caption>
    <thead><tr><th scope="col">Away</th><th scope="col">Their tasks go to</th><th scope="col">From</th><th scope="col">Until</th></tr></thead>
    <tbody>
      ${data.delegations.map(
        (d) => html`<tr key=${d.id} data-delegation-id=${d.id}>
          <td>${d.actor.name}</td><td>${d.delegate.name}</td>
          <td><${When} iso=${d.startsAt} /></td><td><${When} iso=${d.endsAt} /></td>
        </tr>`,
      )}
    </tbody>
  </table></div>`;
}
