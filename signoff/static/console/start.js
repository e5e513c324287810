// The console's first requests, sent while its modules are still on their way. The page
// runs this classic script as soon as it comes (a module, even an async one, waits for
// the parser and the others' compiling), so the viewer and the list's first page are
// asked for at once; the page carries the sign-in's session, so nothing is asked first.
// It holds the first screen's documents and the one way the console posts a document:
// api.js and queries.js take both from `signoffStart`, so each is written once.
"use strict";

(() => {
  const TASK_FIELDS = `
  id kind title priority dueAt state claimExpiresAt claimedByMe createdAt
  assignee { name }
  queue { id slug name }
  proposal {
    id state actionCode approvalCount requiredApprovals payloadDigest
    subject payload createdAt proposedBy { name } target { id name summaryField }
  }
`;

  const LOAD_VIEWER = `query Viewer {
  viewer { actor { id name role } queues { id slug name } }
}`;

  // The first page of each list, a screenful (the list draws 15 rows in its first frame);
  // MORE_TASKS (queries.js) reads the rest, 100 at a time.
  const LOAD_TASKS = `query Tasks {
  changeFeedCursor
  open: tasks(state: OPEN, first: 15) { nodes { ${TASK_FIELDS} } pageInfo { hasNextPage endCursor } }
  claimed: tasks(state: CLAIMED, first: 15) { nodes { ${TASK_FIELDS} } pageInfo { hasNextPage endCursor } }
}`;

  const TOKEN_KEY = "signoff.token";

  const ENDPOINT = "/graphql";

  /**
   * The headers and fetch credentials of a request: `auth` is `{ csrf }` for a console
   * signed in through the identity provider (the HttpOnly session cookie goes with it,
   * and its CSRF token), or `{ bearer }` for an API token.
   */
  function credentials(auth) {
    if ("csrf" in auth) return { headers: { "X-CSRF-Token": auth.csrf || "" }, credentials: "same-origin" };
    return { headers: { Authorization: `Bearer ${auth.bearer}` }, credentials: "omit" };
  }

  /** POST one GraphQL document; resolves to the fetch's Response. */
  function post(auth, query, variables = {}) {
    const signed = credentials(auth);
    return fetch(ENDPOINT, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", ...signed.headers },
      body: JSON.stringify({ query, variables }),
      credentials: signed.credentials,
      cache: "no-store",
    });
  }

  /** A request whose failure is read (and reported) by whoever awaits it, if anyone does. */
  function sent(auth, query) {
    const response = post(auth, query);
    response.catch(() => {});
    return response;
  }

  // What GET /auth/session answers, as the page carries it; how one may sign in; and the
  // tab's credential: the session, a token kept from earlier in this tab, or none.
  const session = JSON.parse(document.getElementById("console-session").textContent);
  const options = { provider: Boolean(session.provider), tokenSignIn: session.tokenSignIn !== false };
  let auth = null;
  if (session.signedIn) {
    auth = { csrf: session.csrfToken };
  } else if (options.tokenSignIn && sessionStorage.getItem(TOKEN_KEY)) {
    auth = { bearer: sessionStorage.getItem(TOKEN_KEY) };
  }
  const first = auth ? { viewer: sent(auth, LOAD_VIEWER), tasks: sent(auth, LOAD_TASKS) } : null;

  window.signoffStart = Object.freeze({
    documents: Object.freeze({ TASK_FIELDS, LOAD_VIEWER, LOAD_TASKS }),
    TOKEN_KEY,
    ENDPOINT,
    credentials,
    post,
    session,
    options,
    auth,
    first,
  });
})();
