// The Admin section (admins only): one screen per route (#/admin/<screen>), each in its own
// module (admin-*.js) with its data's `load()` and its `Screen`. Every change a screen
// makes is the API's own mutation; a refusal is said in words (messages.js) and the
// screen is drawn again from what the server has.

import { html } from "../components.js";
import { Layout } from "../nav.js";
import { ADMIN } from "../roles.js";
import { ADMIN_SCREENS } from "../router.js";
import { ask, focusHeading, redraw, refused, role, say, state } from "../store.js";
import * as channels from "./admin-channels.js";
import * as delegations from "./admin-delegations.js";
import * as queues from "./admin-queues.js";
import * as signIn from "./admin-sign-in.js";
import * as targets from "./admin-targets.js";
import * as tokens from "./admin-tokens.js";

const SCREENS = {
  queues,
  targets,
  tokens,
  channels,
  delegations,
  "sign-in": signIn,
};

// What the screen was last drawn from: { screen, data } or { screen, forbidden: true }.
let shown = null;
let busy = false; // a change on its way: every control waits for its answer
// A secret the server shows once (a new token, a webhook's signing secret), kept on the
// screen until the reader leaves it; never stored anywhere else.
let revealed = null;

/** Load `screen` and draw it (on arrival, and again after each change). */
export async function showAdmin(screen, arriving = true) {
  state.openTask = null;
  if (arriving) revealed = null;
  const module = SCREENS[screen];
  if (!module || role() !== ADMIN) {
    shown = { screen, forbidden: true };
    redraw();
    focusHeading();
    return;
  }
  let data;
  try {
    data = await module.load(ask, state.route.query);
  } catch (failure) {
    refused(failure);
    return;
  }
  if (state.route.name !== "admin" || state.route.params.screen !== screen) return; // moved on
  // The navigation lists every queue to an admin: one created or renamed here shows there.
  if (screen === "queues") state.queues = data.queues.map(({ id, slug, name }) => ({ id, slug, name }));
  shown = { screen, data };
  redraw();
  if (arriving) focusHeading();
}

export function AdminView() {
  const screen = state.route.params.screen;
  const entry = ADMIN_SCREENS.find((s) => s.screen === screen);
  const title = entry ? entry.title : "Admin";
  let content;
  if (!shown || shown.screen !== screen) content = html`<p class="loading">Loading…</p>`;
  else if (shown.forbidden) content = html`<p class="empty">The Admin screens are for admins.</p>`;
  else {
    const Screen = SCREENS[screen].Screen;
    content = html`<${Screen} data=${shown.data} act=${act} busy=${busy} revealed=${revealed} query=${state.route.query} />`;
  }
  return html`<${Layout}>
    <section class="work admin" aria-labelledby="admin-title">
      <h2 id="admin-title" tabindex="-1">${title}</h2>
      ${content}
    </section>
  <//>`;
}

/**
 * Send one mutation; say `done` when it is accepted, or the refusal in words; then draw
 * the screen again from the server. `reveal(data)` picks a secret the answer shows once.
 */
async function act(mutation, input, done, reveal = null) {
  if (busy) return;
  busy = true;
  redraw();
  try {
    const data = await ask(mutation, { input });
    if (reveal) revealed = reveal(data);
    say(done, "ok");
  } catch (failure) {
    refused(failure);
  }
  busy = false;
  if (state.token && state.route.name === "admin") await showAdmin(state.route.params.screen, false);
}

/** Forget what was shown (signed out, or left): the next visit loads it afresh. */
export function leaveAdmin() {
  shown = null;
  busy = false;
  revealed = null;
}
