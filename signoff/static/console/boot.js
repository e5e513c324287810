// The console's first requests, started while the rest of its modules are still on their
// way: the page loads this module on its own (async, with only the two import-free
// modules it needs) and carries the sign-in's session itself, so the viewer and the
// list's first page are asked for at once instead of after every view's file has come
// and run. app.js imports the same module instance and takes the answers from
// `beginning`.

import { SESSION, request, useSession } from "./api.js";
import { LOAD_TASKS, LOAD_VIEWER } from "./queries.js";

export const TOKEN_KEY = "signoff.token";

/** What the server offers (GET /auth/session), as the page carries it. */
function readSession() {
  return JSON.parse(document.getElementById("console-session").textContent);
}

/** A request whose refusal is read (and reported) by whoever awaits it, if anyone does. */
function asked(token, query) {
  const answer = request(token, query);
  answer.catch(() => {});
  return answer;
}

/**
 * The session, how one may sign in, the token this tab signs in with (the session, a
 * token kept from earlier in this tab, or none) and, with a token, the viewer and the
 * list's first page already asked for.
 */
function begin() {
  const session = readSession();
  const options = { provider: Boolean(session.provider), tokenSignIn: session.tokenSignIn !== false };
  let token = null;
  if (session.signedIn) {
    useSession(session.csrfToken);
    token = SESSION;
  } else if (options.tokenSignIn) {
    token = sessionStorage.getItem(TOKEN_KEY);
  }
  const first = token ? { viewer: asked(token, LOAD_VIEWER), tasks: asked(token, LOAD_TASKS) } : null;
  return { session, options, token, first };
}

export const beginning = begin();
