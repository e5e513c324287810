// Admin: the sign-in claim mapping, read-only (it is SIGNOFF_OIDC_CLAIMS_FILE, read when
// the server starts): which group of the identity provider is which role, in which queues.

import { html } from "../components.js";
import { ADMIN_CLAIM_MAPPING } from "../admin-queries.js";

export function load(ask) {
  return ask(ADMIN_CLAIM_MAPPING);
}

export function Screen({ data }) {
  const mapping = data.claimMapping;
  if (!mapping) {
    return html`<p class="empty">
      Sign-in with an identity provider is not set up on this server (SIGNOFF_OIDC_ISSUER): people sign in with API tokens.
    </p>`;
  }
  return html`
    <p class="hint">Read from the claim mapping file when the server started; change the file and restart to change it.</p>
    <dl class="facts">
      <dt>Groups claim</dt><dd><code>${mapping.groupsClaim}</code></dd>
      <dt>Name claims</dt><dd>${mapping.nameClaims.map((c, i) => html`${i ? ", " : ""}<code>${c}</code>`)}</dd>
    </dl>
    <div class="table-scroll"><table>
      <caption class="hint">A person's role is that of the first line their groups match; their queues those of every line.</caption>
      <thead><tr><th scope="col">Line</th><th scope="col">Group</th><th scope="col">Role</th><th scope="col">Queues</th></tr></thead>
      <tbody>
        ${mapping.groups.map(
          (g) => html`<tr key=${g.group}>
            <td>${g.line}</td><td><code>${g.group}</code></td><td>${g.role.toLowerCase()}</td>
            <td>${g.queues.length ? g.queues.map((q, i) => html`${i ? ", " : ""}<code>${q}</code>${g.missingQueues.includes(q) ? html` <strong class="missing">(no such queue)</strong>` : null}`) : "—"}</td>
          </tr>`,
        )}
      </tbody>
    </table></div>
  `;
}
