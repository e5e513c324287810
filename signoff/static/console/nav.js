// The side navigation every signed-in view shares: the viewer's queues, History,
// Operations for the staff, and the Admin section for admins.

import { html } from "./components.js";
import { ADMIN, STAFF } from "./roles.js";
import { ADMIN_SCREENS, href } from "./router.js";
import { role, state } from "./store.js";

export function QueueNav() {
  const onOperations = state.route.name === "operations" || state.route.name === "incident";
  const onHistory = state.route.name === "history";
  const onQueue = state.route.name === "tasks" || state.route.name === "task";
  const all = [{ id: null, name: "All my queues" }, ...state.queues];
  return html`<nav class="queues" aria-label="Queues">
    <h2 class="nav-title">Queues</h2>
    <ul>
      ${all.map(
        (queue) => html`<li key=${queue.id || ""}>
          <a
            href=${href("tasks", { queue: queue.id })}
            aria-current=${onQueue && state.selectedQueue === queue.id ? "page" : null}
          >${queue.name}</a>
        </li>`,
      )}
    </ul>
    <p><a href=${href("history")} aria-current=${onHistory ? "page" : null}>History</a></p>
    ${STAFF.has(role())
      ? html`<p><a href=${href("operations")} aria-current=${onOperations ? "page" : null}>Operations</a></p>`
      : null}
    ${role() === ADMIN ? html`<${AdminNav} />` : null}
  </nav>`;
}

function AdminNav() {
  const current = state.route.name === "admin" ? state.route.params.screen : null;
  return html`<h2 class="nav-title admin-title" id="admin-nav">Admin</h2>
    <ul aria-labelledby="admin-nav">
      ${ADMIN_SCREENS.map(
        ({ screen, title }) => html`<li key=${screen}>
          <a href=${href("admin", { screen })} aria-current=${current === screen ? "page" : null}>${title}</a>
        </li>`,
      )}
    </ul>`;
}

/** A view beside the navigation. */
export function Layout({ children }) {
  return html`<div class="layout"><${QueueNav} />${children}</div>`;
}
