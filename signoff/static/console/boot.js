// The console's first answers, as start.js (a classic script the page runs before any
// module) asked for them: app.js signs in with `beginning` instead of asking again.

import { SESSION, answerOf, useSession } from "./api.js";

const start = window.signoffStart;

export const TOKEN_KEY = start.TOKEN_KEY;

/** An answer whose refusal is read (and reported) by whoever awaits it, if anyone does. */
function answered(response) {
  const answer = answerOf(response);
  answer.catch(() => {});
  return answer;
}

/**
 * The session, how one may sign in, the token this tab signs in with (SESSION, a token
 * kept from earlier in this tab, or none) and, with a token, the viewer and the list's
 * first page, already asked for.
 */
function begin() {
  const { session, options, auth, first } = start;
  let token = null;
  if (auth && "csrf" in auth) {
    useSession(auth.csrf);
    token = SESSION;
  } else if (auth) {
    token = auth.bearer;
  }
  const answers = first ? { viewer: answered(first.viewer), tasks: answered(first.tasks) } : null;
  return { session, options, token, first: answers };
}

export const beginning = begin();
