// Where the console is: one route per view, read from the address's hash so that a link
// (filters included, in the hash's query) opens the same view for whoever follows it,
// with no server route per view.
//
//   #/                  the task list of all my queues
//   #/queue/<id>        the task list of one queue
//   #/task/<id>         one task and its proposal
//   #/operations        the operations page (operators and admins)
//   #/incident/<id>     one incident: its timeline, what it concerns, its moves
//   #/history           decided proposals, filtered by the query (views/history.js)
//   #/proposal/<id>     one proposal's story: its timeline and decision receipt
//   #/admin/<screen>    an Admin screen (admins): queues, targets, tokens, channels,
//                       delegations, sign-in
//
// Any route may carry a query (`#/queue/<id>?sort=due`): `route.query` is its
// URLSearchParams.

const ROUTES = [
  { name: "task", pattern: /^\/task\/([\w-]+)$/, params: ["id"] },
  { name: "queue", pattern: /^\/queue\/([\w-]+)$/, params: ["queue"] },
  { name: "operations", pattern: /^\/operations$/, params: [] },
  { name: "incident", pattern: /^\/incident\/([\w-]+)$/, params: ["id"] },
  { name: "history", pattern: /^\/history$/, params: [] },
  { name: "proposal", pattern: /^\/proposal\/([\w-]+)$/, params: ["id"] },
  { name: "admin", pattern: /^\/admin\/([\w-]+)$/, params: ["screen"] },
  { name: "tasks", pattern: /^\/?$/, params: [] },
];

// The Admin section's screens, in the order its navigation lists them.
export const ADMIN_SCREENS = [
  { screen: "queues", title: "Queues and members" },
  { screen: "targets", title: "Targets" },
  { screen: "tokens", title: "API tokens" },
  { screen: "channels", title: "Notification channels" },
  { screen: "delegations", title: "Delegations" },
  { screen: "sign-in", title: "Sign-in mapping" },
];

/** The route of a hash (`location.hash` by default): `{ name, params, query }`. */
export function parse(hash = window.location.hash) {
  const text = hash.replace(/^#/, "");
  const at = text.indexOf("?");
  const path = at < 0 ? text : text.slice(0, at);
  const query = new URLSearchParams(at < 0 ? "" : text.slice(at + 1));
  for (const route of ROUTES) {
    const match = path.match(route.pattern);
    if (!match) continue;
    const params = Object.fromEntries(route.params.map((name, i) => [name, match[i + 1]]));
    if (route.name === "queue") return { name: "tasks", params, query };
    return { name: route.name, params, query };
  }
  return { name: "tasks", params: {}, query };
}

/** The hash of a route: `href("task", { id })`, `href("tasks", { queue }, query)`. */
export function href(name, params = {}, query = null) {
  let path;
  if (name === "task") path = `#/task/${params.id}`;
  else if (name === "operations") path = "#/operations";
  else if (name === "incident") path = `#/incident/${params.id}`;
  else if (name === "history") path = "#/history";
  else if (name === "proposal") path = `#/proposal/${params.id}`;
  else if (name === "admin") path = `#/admin/${params.screen}`;
  else path = params.queue ? `#/queue/${params.queue}` : "#/";
  const search = query ? String(query) : "";
  return search ? `${path}?${search}` : path;
}

/** Go to a route; the hashchange that follows draws it. */
export function go(hash) {
  window.location.hash = hash;
}
