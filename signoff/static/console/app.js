// The review console: sign in with a token, see the tasks of your queues change live,
// open a proposal, claim, release, approve or reject it. No build step: plain modules.

import { LiveConnection, Refusal, SESSION, postSession, request, retryDelay, useSession } from "./api.js";
import { CONSOLE_ROLES, describe } from "./messages.js";

const TOKEN_KEY = "signoff.token";
const LIVE_STATES = new Set(["OPEN", "CLAIMED"]);
// The roles the server lets follow every queue, and those it lets decide
// (require_scope_role and require_reviewer_of on the server; admins pass both).
const CONSOLE_USERS = new Set(["REVIEWER", "OPERATOR", "ADMIN"]);
const DECIDERS = new Set(["REVIEWER", "ADMIN"]);
// The roles that may read and work incidents (require_role(OPERATOR) in
// signoff/resolvers/incident_response.py and operations.py; admins pass).
const STAFF = new Set(["OPERATOR", "ADMIN"]);
// An incident's moves (signoff/resolvers/lifecycles.py): acknowledge from OPEN; retry and
// resolve from OPEN or ACKNOWLEDGED; a RESOLVED one takes none of them.
const UNRESOLVED = new Set(["OPEN", "ACKNOWLEDGED"]);
// Refusals of the live feed that mean "start again from what the server has now".
const RESYNC_CODES = new Set(["INVALID_CURSOR", "CURSOR_EXPIRED", "SUBSCRIBER_TOO_SLOW"]);
// Refusals that mean this token may not use the console at all: retrying cannot help.
const ACCESS_CODES = new Set(["FORBIDDEN", "UNAUTHENTICATED"]);

const TASK_FIELDS = `
  id kind title priority dueAt state claimExpiresAt claimedByMe createdAt
  assignee { name }
  queue { id slug name }
  proposal {
    id state actionCode approvalCount requiredApprovals payloadDigest
    subject payload createdAt proposedBy { name } target { summaryField }
  }
`;

const LOAD_VIEWER = `query Viewer {
  viewer { actor { id name role } queues { id slug name } }
}`;

const LOAD_ALL_QUEUES = `query Queues { queues { id slug name } }`;

const LOAD_TASKS = `query Tasks {
  changeFeedCursor
  open: tasks(state: OPEN, first: 100) { nodes { ${TASK_FIELDS} } }
  claimed: tasks(state: CLAIMED, first: 100) { nodes { ${TASK_FIELDS} } }
}`;

const QUEUE_EVENTS = `subscription Live($after: String) {
  queueEvents(after: $after) {
    cursor kind entityType entityId entityVersion queueId proposalId snapshot
    task { ${TASK_FIELDS} }
  }
}`;

const LOAD_TASK = `query Task($id: ID!) {
  task(id: $id) {
    ${TASK_FIELDS}
    context response completedAt
    completedBy { name }
    proposal {
      id state actionCode subject payload preconditions payloadDigest operationKey
      requiredApprovals approvalCount expiresAt createdAt deliveryAttemptCount
      deliveryTerminal nextAttemptAt lastErrorCode appliedAt
      agentExecutes executor executionStartedAt executedBy { name } result
      target { name url method }
      proposedBy { name }
      approvals { id decision reason createdAt payloadDigest approver { name } }
      attempts { id attemptNumber responseClass statusCode errorCode durationMs startedAt }
    }
  }
}`;

const LOAD_OPERATIONS = `query Operations {
  operationsSnapshot {
    generatedAt
    proposalsByState { state count }
    openIncidents { severity count }
    humanTasks { pending inFlight retrying }
  }
  incidents(first: 20) {
    nodes {
      id title severity state occurrenceCount lastSeenAt resolutionCode
      proposal { id state deliveryTerminal }
    }
  }
}`;

const CLAIM = `mutation Claim($id: ID!) { claimTask(input: { taskId: $id }) { id state } }`;
const RELEASE = `mutation Release($id: ID!) { releaseTask(input: { taskId: $id }) { id state } }`;
const DECIDE = `mutation Decide($input: DecideProposalInput!) {
  decideProposal(input: $input) { proposal { id state approvalCount } }
}`;
const AMEND = `mutation Amend($input: AmendProposalInput!) {
  amendProposal(input: $input) { proposal { id payloadDigest revision } }
}`;
const DECIDE_MANY = `mutation DecideMany($input: DecideProposalsInput!) {
  decideProposals(input: $input) { results { proposalId code message } }
}`;
const COMPLETE = `mutation Complete($input: CompleteTaskInput!) {
  completeTask(input: $input) { task { id state } }
}`;
const ACKNOWLEDGE_INCIDENT = `mutation AcknowledgeIncident($input: AcknowledgeIncidentInput!) {
  acknowledgeIncident(input: $input) { incident { id state } }
}`;
const RETRY_INCIDENT = `mutation RetryIncident($input: RetryIncidentInput!) {
  retryIncident(input: $input) { incident { id state } }
}`;
const RESOLVE_INCIDENT = `mutation ResolveIncident($input: ResolveIncidentInput!) {
  resolveIncident(input: $input) { incident { id state } }
}`;

// ---------------------------------------------------------------- state

// What the server offers (GET /auth/session): the identity provider, token paste, or both.
let signInOptions = { provider: false, tokenSignIn: true };

const state = {
  token: null,
  viewer: null,
  queues: [],
  tasks: new Map(), // id -> task (OPEN or CLAIMED only)
  versions: new Map(), // task id -> the newest entityVersion applied
  live: null,
  stopFeed: null,
  selectedQueue: null,
  onOperations: false,
  openTask: null, // the task shown on the task page
  taskAsks: 0, // task page loads asked for so far, in order
  taskDrawn: 0, // the newest of them the task page was drawn from
  selected: new Set(), // proposal ids ticked in the list for a bulk decision
  resyncs: 0, // reloads of the list in a row with no event between them
  resyncTimer: null,
};

const main = document.getElementById("main");
const notice = document.getElementById("notice");
const liveStatus = document.getElementById("live");
const who = document.getElementById("who");
const signOutButton = document.getElementById("sign-out");
const help = document.getElementById("help");

// ---------------------------------------------------------------- helpers

/** Build an element; children are nodes or text (never parsed as HTML). */
function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "class") element.className = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return h("time", { datetime: iso }, date.toLocaleString());
}

function say(message, kind = "error") {
  notice.textContent = message;
  notice.className = `notice ${kind}`;
  notice.hidden = !message;
}

function refused(failure) {
  if (failure instanceof Refusal) {
    say(describe(failure));
    if (failure.code === "UNAUTHENTICATED") signOut(describe(failure));
  } else {
    say(String(failure));
  }
}

async function ask(query, variables) {
  return request(state.token, query, variables);
}

function badge(text) {
  return h("span", { class: `badge badge-${String(text).toLowerCase()}` }, text);
}

function focusHeading() {
  const heading = main.querySelector(".work h2, article h2, form h2");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus();
  }
}

// ---------------------------------------------------------------- JSON shown readably

function readable(value) {
  if (Array.isArray(value)) {
    if (!value.length) return h("span", { class: "empty" }, "(empty list)");
    return h("ol", { class: "json-list" }, value.map((item) => h("li", {}, readable(item))));
  }
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value);
    if (!keys.length) return h("span", { class: "empty" }, "(nothing)");
    return h(
      "dl",
      { class: "json" },
      keys.map((key) => [h("dt", {}, key), h("dd", {}, readable(value[key]))]),
    );
  }
  if (typeof value === "string") return h("span", { class: "json-string" }, value);
  return h("span", { class: "json-scalar" }, JSON.stringify(value));
}

function jsonBlock(title, value) {
  return h(
    "section",
    { class: "json-block" },
    h("h3", {}, title),
    readable(value),
    h("details", {}, h("summary", {}, `${title} as JSON`), h("pre", {}, JSON.stringify(value, null, 2))),
  );
}

// ---------------------------------------------------------------- sign in and out

function renderSignIn(message, endSessionUrl) {
  document.body.classList.remove("signed-in");
  who.textContent = "";
  liveStatus.textContent = "";
  delete liveStatus.dataset.state; // its coloured dot is drawn from the state
  say(message || "", "error");
  const parts = [h("h2", {}, "Sign in")];
  if (signInOptions.provider) {
    parts.push(
      h("a", { id: "provider-sign-in", class: "button primary", href: "/auth/sign-in" },
        "Sign in with your company account"),
    );
  }
  if (endSessionUrl) {
    parts.push(
      h("p", { class: "hint" }, "You are signed out of Signoff. ",
        h("a", { id: "provider-sign-out", href: endSessionUrl }, "Also sign out at your identity provider")),
    );
  }
  if (!signInOptions.tokenSignIn) {
    main.replaceChildren(h("div", { class: "sign-in" }, ...parts));
    const link = document.getElementById("provider-sign-in");
    if (link) link.focus();
    return;
  }
  const input = h("input", {
    id: "token",
    name: "token",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    required: true,
    "aria-describedby": "token-help",
  });
  const form = h(
    "form",
    { class: "sign-in", onsubmit: (event) => { event.preventDefault(); signIn(input.value.trim()); } },
    ...parts,
    h("label", { for: "token" }, "API token"),
    input,
    h(
      "p",
      { id: "token-help", class: "hint" },
      "The token from signoff token create. It stays in this tab only (sessionStorage) and " +
        "is sent in the Authorization header, never in a cookie or a URL.",
    ),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
  );
  main.replaceChildren(form);
  input.focus();
}

async function signIn(token) {
  if (!token) return;
  if (token !== SESSION && !signInOptions.tokenSignIn) return;
  state.token = token;
  let data;
  try {
    data = await ask(LOAD_VIEWER);
  } catch (failure) {
    state.token = null;
    renderSignIn(failure instanceof Refusal ? describe(failure) : String(failure));
    return;
  }
  const role = data.viewer.actor.role;
  if (!CONSOLE_USERS.has(role)) {
    if (token === SESSION) await postSession("/auth/sign-out");
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    renderSignIn(`${CONSOLE_ROLES} This token is ${article(role)} ${role.toLowerCase()}'s. (FORBIDDEN)`);
    return;
  }
  if (token !== SESSION) sessionStorage.setItem(TOKEN_KEY, token);
  state.viewer = data.viewer;
  state.queues = STAFF.has(role) ? (await ask(LOAD_ALL_QUEUES)).queues : data.viewer.queues;
  document.body.classList.add("signed-in");
  who.textContent = `${data.viewer.actor.name} (${data.viewer.actor.role.toLowerCase()})`;
  say("");
  state.live = new LiveConnection(token, showLiveStatus);
  await loadTasks();
  route();
}

function article(word) {
  return /^[aeiou]/i.test(word) ? "an" : "a";
}

async function signOut(message) {
  const session = state.token === SESSION;
  sessionStorage.removeItem(TOKEN_KEY);
  if (state.live) state.live.close();
  clearTimeout(state.resyncTimer);
  state.resyncs = 0;
  Object.assign(state, { token: null, viewer: null, live: null, stopFeed: null, openTask: null });
  state.tasks.clear();
  state.versions.clear();
  if (window.location.hash) history.replaceState(null, "", window.location.pathname);
  let endSessionUrl = null;
  if (session) {
    // End the session on Signoff (its cookie goes), then offer the provider's sign-out.
    try {
      endSessionUrl = (await postSession("/auth/sign-out")).endSessionUrl || null;
    } catch (failure) {
      endSessionUrl = null;
    }
    useSession(null);
  }
  renderSignIn(message, endSessionUrl);
}

function showLiveStatus(status) {
  const words = {
    connecting: "Connecting…",
    live: "Live",
    reconnecting: "Reconnecting…",
    stopped: "Feed stopped; resuming…",
    rejected: "Signed out",
  };
  liveStatus.textContent = words[status] || status;
  liveStatus.dataset.state = status;
  if (status === "rejected") signOut(`${describe(new Refusal("UNAUTHENTICATED", ""))} ${CONSOLE_ROLES}`);
}

// ---------------------------------------------------------------- the live task list

async function loadTasks() {
  let data;
  try {
    data = await ask(LOAD_TASKS);
  } catch (failure) {
    refused(failure);
    return;
  }
  if (!state.live) return; // signed out meanwhile
  state.tasks.clear();
  state.versions.clear();
  for (const task of [...data.open.nodes, ...data.claimed.nodes]) state.tasks.set(task.id, task);
  if (state.stopFeed) state.stopFeed();
  state.stopFeed = state.live.subscribe(
    QUEUE_EVENTS,
    { after: data.changeFeedCursor },
    { next: applyEvent, error: feedRefused },
    (event) => event && event.cursor,
  );
}

function feedRefused(refusal) {
  state.stopFeed = null;
  if (ACCESS_CODES.has(refusal.code)) {
    // The token lost (or never had) a role that may follow the queues.
    signOut(`${CONSOLE_ROLES} ${describe(refusal)}`);
    return;
  }
  if (RESYNC_CODES.has(refusal.code)) {
    // Start again from what the server has now, then follow it from there; when that
    // keeps being refused with no event between, wait longer each time.
    const delay = state.resyncs ? retryDelay(state.resyncs - 1) : 0;
    state.resyncs += 1;
    state.resyncTimer = setTimeout(() => {
      if (state.token) loadTasks().then(route);
    }, delay);
    return;
  }
  refused(refusal);
}

function applyEvent(event) {
  state.resyncs = 0;
  if (event.entityType === "task") {
    const known = state.versions.get(event.entityId) || 0;
    const version = event.entityVersion || 0;
    if (version >= known) {
      state.versions.set(event.entityId, version);
      const task = event.task;
      if (task && LIVE_STATES.has(task.state)) state.tasks.set(task.id, task);
      else state.tasks.delete(event.entityId);
    }
  } else if (event.entityType === "proposal" && event.snapshot) {
    for (const task of state.tasks.values()) {
      if (task.proposal && task.proposal.id === event.entityId) {
        task.proposal.state = event.snapshot.state || task.proposal.state;
      }
    }
  }
  const shown = state.openTask;
  if (shown && (event.entityId === shown.id || (shown.proposal && event.proposalId === shown.proposal.id))) {
    refreshTask(shown.id);
  } else if (!shown && !state.onOperations) {
    renderList();
  }
}

function sortedTasks() {
  return [...state.tasks.values()]
    .filter((task) => !state.selectedQueue || task.queue.id === state.selectedQueue)
    .sort(
      (a, b) =>
        b.priority - a.priority || a.dueAt.localeCompare(b.dueAt) || a.id.localeCompare(b.id),
    );
}

function queueNav() {
  const all = [{ id: null, name: "All my queues" }, ...state.queues];
  return h(
    "nav",
    { class: "queues", "aria-label": "Queues" },
    h("h2", { class: "nav-title" }, "Queues"),
    h(
      "ul",
      {},
      all.map((queue) =>
        h(
          "li",
          {},
          h(
            "a",
            {
              href: queue.id ? `#/queue/${queue.id}` : "#/",
              "aria-current": !state.onOperations && state.selectedQueue === queue.id ? "page" : null,
            },
            queue.name,
          ),
        ),
      ),
    ),
    STAFF.has(state.viewer.actor.role)
      ? h("p", {}, h("a", { href: "#/operations", "aria-current": state.onOperations ? "page" : null }, "Operations"))
      : null,
  );
}

function taskRow(task) {
  const proposal = task.proposal;
  const pick =
    proposal && proposal.state === "APPROVAL_REQUIRED" && DECIDERS.has(state.viewer.actor.role)
      ? h("input", {
          type: "checkbox",
          class: "pick",
          id: `pick-${task.id}`,
          "aria-label": `Select ${task.title} for a bulk decision`,
          checked: state.selected.has(proposal.id),
          onchange: (event) => toggle(proposal.id, event.target.checked),
        })
      : null;
  return h(
    "li",
    { class: "task", "data-task-id": task.id },
    pick,
    h("a", { href: `#/task/${task.id}`, class: "task-link" }, task.title),
    whatItIs(task),
    h(
      "div",
      { class: "task-meta" },
      badge(task.state),
      proposal ? badge(proposal.state) : badge(task.kind),
      proposal ? h("span", {}, `${proposal.approvalCount} of ${proposal.requiredApprovals} approvals`) : null,
      task.assignee ? h("span", {}, task.claimedByMe ? "claimed by you" : `claimed by ${task.assignee.name}`) : null,
      h("span", {}, "due ", when(task.dueAt)),
      h("span", {}, task.queue.name),
    ),
  );
}

// What tells one task from another in the list: the target's summary field and the
// subject for a proposal, who asked for it and how long ago.
function whatItIs(task) {
  const proposal = task.proposal;
  const parts = [];
  if (proposal) {
    const field = proposal.target.summaryField;
    if (field && proposal.payload && proposal.payload[field] !== undefined) {
      parts.push(h("span", { class: "summary" }, `${field} ${inline(proposal.payload[field])}`));
    }
    parts.push(h("span", {}, inline(proposal.subject)));
    parts.push(h("span", {}, `proposed by ${proposal.proposedBy.name}`));
  }
  const since = proposal ? proposal.createdAt : task.createdAt;
  parts.push(h("span", {}, h("time", { datetime: since, title: new Date(since).toLocaleString() }, age(since))));
  return h("div", { class: "task-what" }, parts);
}

const INLINE_LIMIT = 80;

/** A JSON value on one short line: `order o-1, lines 2` rather than braces and quotes. */
function inline(value) {
  let text;
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    text = Object.entries(value).map(([key, v]) => `${key} ${typeof v === "string" ? v : JSON.stringify(v)}`).join(", ");
  } else {
    text = typeof value === "string" ? value : JSON.stringify(value);
  }
  return text.length > INLINE_LIMIT ? `${text.slice(0, INLINE_LIMIT - 1)}…` : text;
}

function age(iso) {
  const seconds = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (seconds < 60) return "just now";
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}

function renderList() {
  state.openTask = null;
  const tasks = sortedTasks();
  const queue = state.queues.find((q) => q.id === state.selectedQueue);
  const list = tasks.length
    ? h("ul", { class: "tasks", "aria-label": "Tasks waiting" }, tasks.map(taskRow))
    : h("p", { class: "empty" }, "Nothing waiting. New tasks appear here as they arrive.");
  const previous = document.activeElement && document.activeElement.closest(".task");
  const previousId = previous && previous.dataset.taskId;
  main.replaceChildren(
    h(
      "div",
      { class: "layout" },
      queueNav(),
      h(
        "section",
        { class: "work", "aria-labelledby": "tasks-title" },
        h("h2", { id: "tasks-title" }, queue ? queue.name : "All my queues", h("span", { class: "count" }, ` (${tasks.length})`)),
        bulkBar(tasks),
        list,
      ),
    ),
  );
  if (previousId) {
    const again = main.querySelector(`[data-task-id="${CSS.escape(previousId)}"] a`);
    if (again) again.focus();
  }
}

// ---------------------------------------------------------------- one task and its proposal

async function showTask(id) {
  // Routing again to the task already shown (the first task list arriving after the
  // reviewer opened a task, a resync) draws it again in place: starting over from
  // "Loading…" would throw away what they are typing in it.
  if (state.openTask && state.openTask.id === id) {
    await refreshTask(id);
    return;
  }
  state.openTask = { id, proposal: null };
  main.replaceChildren(h("p", { class: "loading" }, "Loading…"));
  await refreshTask(id);
}

async function refreshTask(id) {
  state.taskAsks += 1;
  const asked = state.taskAsks;
  let data;
  try {
    data = await ask(LOAD_TASK, { id });
  } catch (failure) {
    refused(failure);
    return;
  }
  if (!state.openTask || state.openTask.id !== id) return; // moved on meanwhile
  // Answers can come back out of order: one asked before the page's last drawing would
  // draw an older state over it (and take a newer digest for an edit to set aside).
  if (asked < state.taskDrawn) return;
  state.taskDrawn = asked;
  const shown = state.openTask.proposal;
  state.openTask = data.task;
  const firstDrawing = !main.querySelector(".task-page");
  const draft = keepDraft();
  const caret = keepCaret();
  renderTask(data.task);
  restoreDraft(draft, shown, data.task.proposal);
  // The heading takes focus when the page is first drawn; drawn again, it leaves the
  // reviewer in the field they are in.
  if (!restoreCaret(caret) && firstDrawing) focusHeading();
}

// Where the reviewer is on the page: the field that has focus and its selection, so that
// typing goes on in the same place (a selection typed over is still replaced).
function keepCaret() {
  const active = document.activeElement;
  if (!active || !active.id || !main.contains(active)) return null;
  const selection = typeof active.selectionStart === "number"
    ? [active.selectionStart, active.selectionEnd, active.selectionDirection]
    : null;
  return { id: active.id, selection, scrollTop: active.scrollTop };
}

function restoreCaret(caret) {
  const field = caret && document.getElementById(caret.id);
  if (!field) return false;
  field.focus();
  if (caret.selection && typeof field.selectionStart === "number") field.setSelectionRange(...caret.selection);
  field.scrollTop = caret.scrollTop;
  return true;
}

// What the reviewer has typed or opened on a task page survives the page being drawn
// again, which every live event about the task does, often while they are typing.
const DRAFT_FIELDS = ["reason", "response", "amend-payload", "amend-reason"];

function keepDraft() {
  const values = {};
  for (const id of DRAFT_FIELDS) {
    const field = document.getElementById(id);
    if (field) values[id] = field.value;
  }
  const amend = main.querySelector("details.amend");
  const payload = document.getElementById("amend-payload");
  return {
    values,
    amendOpen: Boolean(amend && amend.open),
    payloadEdited: Boolean(payload && payload.value !== payload.defaultValue),
  };
}

function restoreDraft(draft, before, now) {
  // An edited payload was written against the digest shown before; if the payload
  // has changed since, keeping the edit would amend a revision the reviewer never saw.
  const moved = Boolean(before && now && before.payloadDigest !== now.payloadDigest);
  for (const [id, value] of Object.entries(draft.values)) {
    if (id === "amend-payload" && (moved || !draft.payloadEdited)) continue;
    const field = document.getElementById(id);
    if (field) field.value = value;
  }
  const amend = main.querySelector("details.amend");
  if (amend && draft.amendOpen) amend.open = true;
  if (moved && draft.payloadEdited) {
    say("The payload changed while you were editing it: your edit was set aside, the form shows the new revision.");
  }
}

function approvalsSection(proposal) {
  return h(
    "section",
    { "aria-labelledby": "approvals-title" },
    h("h3", { id: "approvals-title" }, `Approvals: ${proposal.approvalCount} of ${proposal.requiredApprovals}`),
    proposal.approvals.length
      ? h(
          "ul",
          { class: "approvals" },
          proposal.approvals.map((a) =>
            h("li", {}, badge(a.decision), ` ${a.approver.name}, `, when(a.createdAt), a.reason ? ` — “${a.reason}”` : ""),
          ),
        )
      : h("p", { class: "empty" }, "No decisions yet."),
  );
}

// A target without a url: its agent executes the approved action once, and reports.
function executionSection(proposal) {
  return h(
    "section",
    { "aria-labelledby": "execution-title" },
    h("h3", { id: "execution-title" }, "Execution by the agent"),
    proposal.executedBy
      ? h(
          "p",
          { id: "executed-by" },
          `${proposal.executedBy.name}${proposal.executor ? ` (${proposal.executor})` : ""} began it `,
          when(proposal.executionStartedAt),
          "; it is ",
          badge(proposal.state),
          ".",
        )
      : h("p", { class: "empty" }, "Not executed yet."),
    proposal.lastErrorCode ? h("p", {}, "Last error: ", h("code", {}, proposal.lastErrorCode)) : null,
    proposal.result == null ? null : jsonBlock("Result", proposal.result),
  );
}

function attemptsSection(proposal) {
  if (proposal.agentExecutes) return executionSection(proposal);
  const rows = proposal.attempts.map((a) =>
    h(
      "tr",
      {},
      h("td", {}, a.attemptNumber),
      h("td", {}, badge(a.responseClass)),
      h("td", {}, a.statusCode ?? "—"),
      h("td", {}, a.errorCode ?? "—"),
      h("td", {}, a.durationMs == null ? "—" : `${a.durationMs} ms`),
      h("td", {}, when(a.startedAt)),
    ),
  );
  return h(
    "section",
    { "aria-labelledby": "attempts-title" },
    h("h3", { id: "attempts-title" }, `Delivery attempts (${proposal.deliveryAttemptCount})`),
    rows.length
      ? h(
          "div",
          { class: "table-scroll" },
          h(
            "table",
            {},
            h("thead", {}, h("tr", {}, ["#", "result", "HTTP", "error", "took", "started"].map((c) => h("th", { scope: "col" }, c)))),
            h("tbody", {}, rows),
          ),
        )
      : h("p", { class: "empty" }, "Not delivered yet."),
    proposal.lastErrorCode ? h("p", {}, "Last error: ", h("code", {}, proposal.lastErrorCode)) : null,
    proposal.state === "FAILED" && !proposal.deliveryTerminal
      ? h("p", {}, "Delivery will be retried at ", when(proposal.nextAttemptAt), ".")
      : null,
  );
}

function actions(task) {
  const live = LIVE_STATES.has(task.state);
  // Claiming, deciding, amending and completing are the deciders' (the bulk checkboxes'
  // rule): anyone else reads the task and is told why it offers no form.
  if (!DECIDERS.has(state.viewer.actor.role)) {
    if (!live) return null;
    const role = state.viewer.actor.role.toLowerCase();
    return h(
      "section",
      { class: "actions", "aria-label": "Actions" },
      h(
        "p",
        { id: "no-decision", class: "hint" },
        `You are signed in as ${article(role)} ${role}: only reviewers of this queue and admins decide its work, so there is no decision form here.`,
      ),
    );
  }
  const buttons = [];
  if (live && !task.claimedByMe) {
    buttons.push(h("button", { type: "button", id: "claim", onclick: () => act(CLAIM, { id: task.id }, "Claimed.") }, "Claim ", h("kbd", {}, "c")));
  }
  if (live && task.claimedByMe) {
    buttons.push(h("button", { type: "button", id: "release", onclick: () => act(RELEASE, { id: task.id }, "Released.") }, "Release ", h("kbd", {}, "l")));
  }
  const controls = [h("div", { class: "buttons" }, buttons)];
  const proposal = task.proposal;
  if (live && proposal && proposal.state === "APPROVAL_REQUIRED") {
    controls.push(
      h(
        "form",
        { class: "decide", onsubmit: (event) => event.preventDefault() },
        h("label", { for: "reason" }, "Reason (required to reject, optional to approve)"),
        h("textarea", { id: "reason", rows: "3", maxlength: "2000", "aria-describedby": "decide-help", onkeydown: reasonKeys }),
        h(
          "p",
          { id: "decide-help", class: "hint" },
          "Your decision names the digest shown above: ",
          h("code", {}, proposal.payloadDigest),
          ". Ctrl+Enter in the reason rejects.",
        ),
        h(
          "div",
          { class: "buttons" },
          h("button", { type: "button", id: "approve", class: "primary", onclick: () => decide("APPROVED") }, "Approve ", h("kbd", {}, "a")),
          h("button", { type: "button", id: "reject", class: "danger", onclick: () => decide("REJECTED") }, "Reject ", h("kbd", {}, "r")),
        ),
      ),
    );
    controls.push(amendForm(proposal));
  } else if (live && !proposal) {
    controls.push(
      h(
        "form",
        { class: "decide", onsubmit: (event) => { event.preventDefault(); complete(task); } },
        h("label", { for: "response" }, "Response (JSON that meets the task's response schema)"),
        h("textarea", { id: "response", rows: "4", spellcheck: "false" }, "{}"),
        h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Complete")),
      ),
    );
  }
  if (!buttons.length && controls.length === 1) return null; // nothing left to do here
  return h("section", { class: "actions", "aria-label": "Actions" }, controls);
}

function renderTask(task) {
  const proposal = task.proposal;
  const facts = [
    ["Task", [badge(task.state), " ", task.kind]],
    ["Queue", task.queue.name],
    ["Claimed by", task.assignee ? (task.claimedByMe ? "you" : task.assignee.name) : "nobody"],
    ["Claim lapses", when(task.claimExpiresAt)],
    ["Due", when(task.dueAt)],
  ];
  if (task.completedBy) facts.push(["Completed by", task.completedBy.name]);
  if (proposal) {
    facts.push(
      ["Proposal", badge(proposal.state)],
      ["Action", h("code", {}, proposal.actionCode)],
      ["Target", targetLine(proposal.target)],
      ["Proposed by", proposal.proposedBy.name],
      ["Expires", when(proposal.expiresAt)],
      ["Payload digest", h("code", { id: "digest", class: "digest" }, proposal.payloadDigest)],
    );
  }
  const body = [
    h("p", {}, h("a", { href: state.selectedQueue ? `#/queue/${state.selectedQueue}` : "#/" }, "← All tasks"), " ", h("kbd", {}, "g")),
    h("h2", {}, task.title),
    h("dl", { class: "facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
  ];
  // What is decided comes before the form that decides it.
  if (proposal) body.push(jsonBlock("Payload", proposal.payload));
  body.push(actions(task));
  if (proposal) {
    body.push(
      jsonBlock("Subject", proposal.subject),
      jsonBlock("Preconditions", proposal.preconditions),
      approvalsSection(proposal),
      attemptsSection(proposal),
    );
  } else {
    body.push(jsonBlock("Context", task.context));
    if (task.response) body.push(jsonBlock("Response", task.response));
  }
  main.replaceChildren(h("article", { class: "task-page" }, body));
}

async function act(mutation, variables, done, settled = () => {}) {
  try {
    await ask(mutation, variables);
    say(done, "ok");
    settled();
  } catch (failure) {
    refused(failure);
  }
  if (state.openTask) await refreshTask(state.openTask.id);
}

async function decide(decision) {
  const task = state.openTask;
  if (!task || !task.proposal) return;
  const box = document.getElementById("reason");
  const reason = box ? box.value.trim() : "";
  if (decision === "REJECTED" && reason.length < 3) {
    say("Say why you reject it: a reason of at least 3 characters.");
    if (box) box.focus();
    return;
  }
  if (reason && reason.length < 3) {
    say("A reason, when given, needs at least 3 characters.");
    if (box) box.focus();
    return;
  }
  await act(
    DECIDE,
    {
      input: {
        proposalId: task.proposal.id,
        decision,
        payloadDigest: task.proposal.payloadDigest, // the digest this page showed
        reason: reason || null,
      },
    },
    decision === "APPROVED" ? "Approved." : "Rejected.",
  );
}

// ---------------------------------------------------------------- amend, and decide many

function amendForm(proposal) {
  return h(
    "details",
    { class: "amend" },
    h("summary", {}, "Amend the payload instead of rejecting it"),
    h(
      "form",
      { onsubmit: (event) => { event.preventDefault(); amend(); } },
      h("label", { for: "amend-payload" }, "New payload (JSON; checked against the target's schema)"),
      h("textarea", { id: "amend-payload", rows: "6", spellcheck: "false" }, JSON.stringify(proposal.payload, null, 2)),
      h("label", { for: "amend-reason" }, "Why (required)"),
      h("textarea", { id: "amend-reason", rows: "2", maxlength: "2000" }),
      h(
        "p",
        { class: "hint" },
        "The amendment names the digest shown above; approvals so far are void and the proposal needs its full quorum again.",
      ),
      h("div", { class: "buttons" }, h("button", { type: "submit", id: "amend" }, "Amend")),
    ),
  );
}

async function amend() {
  const task = state.openTask;
  if (!task || !task.proposal) return;
  let payload;
  try {
    payload = JSON.parse(document.getElementById("amend-payload").value);
  } catch (notJson) {
    say(`The new payload is not JSON: ${notJson.message}`);
    return;
  }
  const reason = document.getElementById("amend-reason").value.trim();
  if (reason.length < 3) {
    say("Say why you amend it: a reason of at least 3 characters.");
    document.getElementById("amend-reason").focus();
    return;
  }
  const input = {
    proposalId: task.proposal.id,
    basedOnDigest: task.proposal.payloadDigest, // the digest this page showed
    payload,
    reason,
    idempotencyKey: crypto.randomUUID(),
  };
  await act(AMEND, { input }, "Amended: the proposal has a new revision and digest.", closeAmendForm);
}

// Once an amendment is made, what was typed for it is spent: nothing of it is kept
// when the page is drawn again with the new revision.
function closeAmendForm() {
  const form = main.querySelector("details.amend");
  if (form) form.open = false;
  for (const id of ["amend-payload", "amend-reason"]) {
    const field = document.getElementById(id);
    if (field) field.value = field.defaultValue;
  }
}

function toggle(proposalId, on) {
  if (on) state.selected.add(proposalId);
  else state.selected.delete(proposalId);
  renderList();
}

function bulkBar(tasks) {
  const chosen = tasks.filter((t) => t.proposal && state.selected.has(t.proposal.id));
  if (!chosen.length) return null;
  return h(
    "form",
    { class: "bulk", "aria-label": "Decide the selected proposals", onsubmit: (event) => event.preventDefault() },
    h("p", { id: "bulk-count" }, `${chosen.length} selected. Each decision names the digest listed for it.`),
    h("label", { for: "bulk-reason" }, "Reason (required to reject, optional to approve)"),
    h("input", { id: "bulk-reason", type: "text", maxlength: "2000" }),
    h(
      "div",
      { class: "buttons" },
      h("button", { type: "button", id: "bulk-approve", class: "primary", onclick: () => decideMany(chosen, "APPROVED") }, "Approve selected"),
      h("button", { type: "button", id: "bulk-reject", class: "danger", onclick: () => decideMany(chosen, "REJECTED") }, "Reject selected"),
      h("button", { type: "button", id: "bulk-clear", onclick: () => { state.selected.clear(); renderList(); } }, "Clear"),
    ),
  );
}

async function decideMany(tasks, decision) {
  const reason = document.getElementById("bulk-reason").value.trim();
  if ((decision === "REJECTED" || reason) && reason.length < 3) {
    say(decision === "REJECTED" ? "Say why you reject them: a reason of at least 3 characters." : "A reason, when given, needs at least 3 characters.");
    return;
  }
  const items = tasks.map((t) => ({ proposalId: t.proposal.id, payloadDigest: t.proposal.payloadDigest }));
  let results;
  try {
    const data = await ask(DECIDE_MANY, {
      input: { items, decision, reason: reason || null, idempotencyKey: crypto.randomUUID() },
    });
    results = data.decideProposals.results;
  } catch (failure) {
    refused(failure);
    return;
  }
  const refusedItems = results.filter((r) => r.code);
  state.selected.clear();
  const verb = decision === "APPROVED" ? "Approved" : "Rejected";
  if (!refusedItems.length) {
    say(`${verb} ${results.length} of ${results.length}.`, "ok");
  } else {
    const why = refusedItems.map((r) => describe({ code: r.code, message: r.message })).join(" ");
    say(`${verb} ${results.length - refusedItems.length} of ${results.length}; ${refusedItems.length} refused: ${why}`);
  }
  await loadTasks();
  renderList();
}

async function complete(task) {
  let response;
  try {
    response = JSON.parse(document.getElementById("response").value);
  } catch (notJson) {
    say(`The response is not JSON: ${notJson.message}`);
    return;
  }
  await act(COMPLETE, { input: { taskId: task.id, response } }, "Completed.");
}

function reasonKeys(event) {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
    event.preventDefault();
    decide("REJECTED");
  }
}

// ---------------------------------------------------------------- operations (staff)

async function showOperations(focusIncident = null) {
  state.openTask = null;
  if (!STAFF.has(state.viewer.actor.role)) {
    operationsPage([h("p", { class: "empty" }, "The Operations page is for operators and admins.")]);
    focusHeading();
    return;
  }
  let data;
  try {
    data = await ask(LOAD_OPERATIONS);
  } catch (failure) {
    refused(failure);
    return;
  }
  if (!state.onOperations) return; // moved on meanwhile
  const snapshot = data.operationsSnapshot;
  const counts = (rows, key) => h("ul", { class: "counts" }, rows.map((r) => h("li", {}, badge(r[key]), ` ${r.count}`)));
  operationsPage([
    h("p", {}, "As of ", when(snapshot.generatedAt)),
    h("h3", {}, "Proposals by state"),
    counts(snapshot.proposalsByState, "state"),
    h("h3", {}, "Open incidents"),
    counts(snapshot.openIncidents, "severity"),
    h("h3", {}, "Tasks"),
    h("p", {}, `${snapshot.humanTasks.pending} open, ${snapshot.humanTasks.inFlight} claimed, ${snapshot.humanTasks.retrying} with a lapsed claim`),
    h("h3", {}, "Recent incidents"),
    data.incidents.nodes.length
      ? h("ul", { class: "incidents" }, data.incidents.nodes.map(incidentRow))
      : h("p", { class: "empty" }, "No incidents."),
  ]);
  const row = focusIncident && main.querySelector(`[data-incident-id="${CSS.escape(focusIncident)}"]`);
  if (row) row.focus();
  else focusHeading();
}

function operationsPage(content) {
  main.replaceChildren(
    h("div", { class: "layout" }, queueNav(), h("section", { class: "work" }, h("h2", {}, "Operations"), content)),
  );
}

function incidentRow(incident) {
  return h(
    "li",
    { class: "incident", "data-incident-id": incident.id, tabindex: "-1" },
    h(
      "div",
      { class: "incident-what" },
      badge(incident.severity),
      badge(incident.state),
      h("span", { class: "incident-title" }, incident.title),
      h("span", { class: "count" }, `×${incident.occurrenceCount}, last `, when(incident.lastSeenAt)),
      incident.resolutionCode ? h("code", {}, incident.resolutionCode) : null,
    ),
    incidentActions(incident),
  );
}

// Only the moves the incident's state allows, and only for roles that may make them. Each
// button's idempotency key is made when it is drawn, so a second press of the same button
// (before it is disabled) replays the first rather than acting twice.
function incidentActions(incident) {
  if (!STAFF.has(state.viewer.actor.role) || !UNRESOLVED.has(incident.state)) return null;
  const incidentId = incident.id;
  const buttons = [];
  if (incident.state === "OPEN") {
    const input = { incidentId, idempotencyKey: crypto.randomUUID() };
    buttons.push(h("button", { type: "button", class: "acknowledge", onclick: (event) => workIncident(event.target, ACKNOWLEDGE_INCIDENT, input, "Acknowledged.") }, "Acknowledge"));
  }
  const proposal = incident.proposal;
  if (proposal && proposal.state === "FAILED" && proposal.deliveryTerminal) {
    const input = { incidentId, idempotencyKey: crypto.randomUUID() };
    buttons.push(h("button", { type: "button", class: "retry", onclick: (event) => workIncident(event.target, RETRY_INCIDENT, input, "Retried: the delivery is queued again.") }, "Retry delivery"));
  }
  const codeId = `resolve-code-${incidentId}`;
  const summaryId = `resolve-summary-${incidentId}`;
  const resolveKey = crypto.randomUUID();
  const resolve = (event) => {
    event.preventDefault();
    const form = event.target;
    const input = {
      incidentId,
      code: form.querySelector("input").value.trim(),
      summary: form.querySelector("textarea").value.trim(),
      idempotencyKey: resolveKey,
    };
    workIncident(form, RESOLVE_INCIDENT, input, "Resolved.");
  };
  return h(
    "div",
    { class: "incident-actions" },
    buttons.length ? h("div", { class: "buttons" }, buttons) : null,
    h(
      "details",
      { class: "resolve" },
      h("summary", {}, "Resolve…"),
      h(
        "form",
        { class: "decide", onsubmit: resolve },
        h("label", { for: codeId }, "Resolution code"),
        h("input", { id: codeId, type: "text", required: true, pattern: "[a-z][a-z0-9_]{1,63}", placeholder: "receiver_fixed", "aria-describedby": `${codeId}-help` }),
        h("p", { id: `${codeId}-help`, class: "hint" }, "2 to 64 lowercase letters, digits or underscores, starting with a letter."),
        h("label", { for: summaryId }, "What was done (3 to 2,000 characters)"),
        h("textarea", { id: summaryId, rows: "2", required: true, minlength: "3", maxlength: "2000" }),
        h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Resolve")),
      ),
    ),
  );
}

// One move on one incident: its controls are disabled until the answer comes (no second
// submission), then the page is drawn again from the server, showing the new state or,
// after a refusal, the state as it is, under the refusal's sentence.
async function workIncident(origin, mutation, input, done) {
  const row = origin.closest(".incident");
  if (!row || row.getAttribute("aria-busy") === "true") return;
  row.setAttribute("aria-busy", "true");
  for (const control of row.querySelectorAll("button, input, textarea")) control.disabled = true;
  try {
    await ask(mutation, { input });
    say(done, "ok");
  } catch (failure) {
    refused(failure);
  }
  if (state.token && state.onOperations) await showOperations(input.incidentId);
}

// ---------------------------------------------------------------- routing and keys

function route() {
  if (!state.token) return;
  const hash = window.location.hash;
  state.onOperations = hash === "#/operations";
  const task = hash.match(/^#\/task\/([\w-]+)$/);
  const queue = hash.match(/^#\/queue\/([\w-]+)$/);
  if (task) {
    showTask(task[1]);
    return;
  }
  if (hash === "#/operations") {
    showOperations();
    return;
  }
  state.selectedQueue = queue ? queue[1] : null;
  renderList();
  focusHeading();
}

function typing(target) {
  return target && (["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable);
}

function moveInList(step) {
  const links = [...main.querySelectorAll(".task-link")];
  if (!links.length) return;
  const at = links.indexOf(document.activeElement);
  const next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(Math.max(at + step, 0), links.length - 1);
  links[next].focus();
}

function nextTask() {
  const tasks = sortedTasks();
  if (!tasks.length) return;
  const at = state.openTask ? tasks.findIndex((t) => t.id === state.openTask.id) : -1;
  const next = tasks[(at + 1) % tasks.length];
  window.location.hash = `#/task/${next.id}`;
}

function onKey(event) {
  if (!state.token || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
  if (help.open) return;
  const onTask = Boolean(state.openTask && state.openTask.title);
  const press = (id) => {
    const button = document.getElementById(id);
    if (button) button.click();
  };
  switch (event.key) {
    case "j":
      if (onTask) return;
      moveInList(1);
      break;
    case "k":
      if (onTask) return;
      moveInList(-1);
      break;
    case "n":
      nextTask();
      break;
    case "g":
      window.location.hash = state.selectedQueue ? `#/queue/${state.selectedQueue}` : "#/";
      break;
    case "c":
      press("claim");
      break;
    case "l":
      press("release");
      break;
    case "a":
      press("approve");
      break;
    case "r": {
      const box = document.getElementById("reason");
      if (box && box.value.trim().length >= 3) press("reject");
      else if (box) {
        box.focus();
        say("Type a reason, then press Ctrl+Enter (or the Reject button) to reject.", "info");
      }
      break;
    }
    case "?":
      help.showModal();
      break;
    default:
      return;
  }
  event.preventDefault();
}

signOutButton.addEventListener("click", () => signOut(""));
document.getElementById("help-button").addEventListener("click", () => help.showModal());
document.getElementById("help-close").addEventListener("click", () => help.close());
window.addEventListener("hashchange", () => {
  say(""); // a notice is about the page it was given on
  route();
});
document.addEventListener("keydown", onKey);

async function start() {
  let session = {};
  try {
    const response = await fetch("/auth/session", { credentials: "same-origin", cache: "no-store" });
    if (response.ok) session = await response.json();
  } catch (failure) {
    session = {};
  }
  signInOptions = {
    provider: Boolean(session.provider),
    tokenSignIn: session.tokenSignIn !== false,
  };
  if (session.signedIn) {
    useSession(session.csrfToken);
    signIn(SESSION);
    return;
  }
  const saved = signInOptions.tokenSignIn ? sessionStorage.getItem(TOKEN_KEY) : null;
  if (saved) signIn(saved);
  else renderSignIn(session.ended || "");
}

start();

// A target as the task page names it: where it delivers only for those shown its URL
// (operators and admins; it is null for reviewers).
function targetLine(target) {
  return target.url ? `${target.name} (${target.method} ${target.url})` : target.name;
}
