// The side navigation every signed-in view shares: the viewer's queues, and Operations
// for the staff.

import { html } from "./components.js";
import { STAFF } from "./roles.js";
import { href } from "./router.js";
import { role, state } from "./store.js";

export function QueueNav() {
  const onOperations = state.route.name === "operations";
  const all = [{ id: null, name: "All my queues" }, ...state.queues];
  return html`<nav class="queues" aria-label="Queues">
    <h2 class="nav-title">Queues</h2>
    <ul>
      ${all.map(
        (queue) => html`<li key=${queue.id || ""}>
          <a
            href=${href("tasks", { queue: queue.id })}
            aria-current=${!onOperations && state.selectedQueue === queue.id ? "page" : null}
          >${queue.name}</a>
        </li>`,
      )}
    </ul>
    ${STAFF.has(role())
      ? html`<p><a href=${href("operations")} aria-current=${onOperations ? "page" : null}>Operations</a></p>`
      : null}
  </nav>`;
}

/** A view beside the navigation. */
export function Layout({ children }) {
  return html`<div class="layout"><${QueueNav} />${children}</div>`;
}
