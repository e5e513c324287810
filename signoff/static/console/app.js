// The review console's shell: sign in with a token or the identity provider, follow the
// tasks of your queues live, and route between the views (views/*.js), each drawn with
// Preact and htm from the vendored file. No build step: plain modules.

import { LiveConnection, Refusal, SESSION, postSession, useSession } from "./api.js";
import { TOKEN_KEY, beginning } from "./boot.js";
import { html, render } from "./components.js";
import { article } from "./format.js";
import { CONSOLE_ROLES, describe } from "./messages.js";
import { LOAD_ALL_QUEUES, LOAD_VIEWER } from "./queries.js";
import { CONSOLE_USERS, STAFF } from "./roles.js";
import { go, href, parse } from "./router.js";
import { ask, askFirstPage, focusHeading, listed, listen, loadTasks, say, state } from "./store.js";
import { SignInView, focusSignIn } from "./views/sign-in.js";
import { TaskView, onTaskPage, refreshTask, rejectFromKeyboard, showTask } from "./views/task.js";
import { TasksView, showTasks } from "./views/tasks.js";

// What the server offers (its page carries GET /auth/session's answer): the identity
// provider, token paste, or both.
let signInOptions = { provider: false, tokenSignIn: true };
let signInScreen = null; // { endSessionUrl } while the sign-in view is up

const main = document.getElementById("main");
const liveStatus = document.getElementById("live");
const who = document.getElementById("who");
const help = document.getElementById("help");

const VIEWS = { tasks: TasksView, task: TaskView };

// The views a reviewer's first screen does not need are loaded when their route first
// opens, so the list's first paint waits for fewer files (their modules and what only
// they use: the charts, uPlot, the admin screens). Each names its component, how it is
// shown from the route, how it follows a live event, and how it forgets what it loaded.
const LATER = {
  operations: {
    load: () => import("./views/operations.js"),
    view: (m) => m.OperationsView,
    show: (m) => m.showOperations(),
    event: (m, event) => m.operationsEvent(event),
    leave: (m) => m.leaveOperations(),
  },
  incident: {
    load: () => import("./views/incident.js"),
    view: (m) => m.IncidentView,
    show: (m, route) => m.showIncident(route.params.id),
    event: (m, event) => m.incidentEvent(event),
    leave: (m) => m.leaveIncident(),
  },
  history: {
    load: () => import("./views/history.js"),
    view: (m) => m.HistoryView,
    show: (m, route) => m.showHistory(route.query),
    leave: (m) => m.leaveHistory(),
  },
  proposal: {
    load: () => import("./views/proposal.js"),
    view: (m) => m.ProposalView,
    show: (m, route) => m.showProposal(route.params.id),
    event: (m, event, route) => {
      if (event.proposalId === route.params.id) m.refreshProposal(route.params.id);
    },
    leave: (m) => m.leaveProposal(),
  },
  admin: {
    load: () => import("./views/admin.js"),
    view: (m) => m.AdminView,
    show: (m, route) => m.showAdmin(route.params.screen),
    leave: (m) => m.leaveAdmin(),
  },
};
const loaded = {}; // route name -> its module, once loaded

function loadedView(name) {
  return loaded[name] ? LATER[name].view(loaded[name]) : null;
}

/** Forget what the loaded views hold, but the one on screen (``keep``). */
function leaveViews(keep = null) {
  for (const [name, module] of Object.entries(loaded)) {
    if (name !== keep) LATER[name].leave(module);
  }
}

function Screen() {
  if (signInScreen) {
    return html`<${SignInView}
      options=${signInOptions}
      endSessionUrl=${signInScreen.endSessionUrl}
      onToken=${signIn}
    />`;
  }
  if (!state.token) return html`<p class="loading">Loading…</p>`;
  const name = state.route.name;
  if (LATER[name] && !loaded[name]) return html`<p class="loading">Loading…</p>`;
  const View = VIEWS[name] || loadedView(name) || TasksView;
  return html`<${View} />`;
}

// The page's own "Loading…" (index.html) is not Preact's: render() keeps it below the
// view, so the first drawing takes it away.
let drawn = false;

/** Draw the current view (synchronously: callers read and focus what it drew). */
function redraw() {
  if (!drawn) main.replaceChildren();
  drawn = true;
  render(html`<${Screen} />`, main);
}

// ---------------------------------------------------------------- sign in and out

function showSignIn(message, endSessionUrl = null) {
  document.body.classList.remove("signed-in");
  who.textContent = "";
  liveStatus.textContent = "";
  delete liveStatus.dataset.state; // its coloured dot is drawn from the state
  say(message || "", "error");
  signInScreen = { endSessionUrl };
  redraw();
  focusSignIn();
}

/**
 * Sign in with ``token``; ``first`` holds the viewer and the list's first page when they
 * were already asked for (boot.js), else both are asked for here, side by side. The page
 * is read only once the viewer may use the console.
 */
async function signIn(token, first = null) {
  if (!token) return;
  if (token !== SESSION && !signInOptions.tokenSignIn) return;
  state.token = token;
  const firstPage = first ? first.tasks : askFirstPage();
  let data;
  try {
    data = await (first ? first.viewer : ask(LOAD_VIEWER));
  } catch (failure) {
    state.token = null;
    showSignIn(failure instanceof Refusal ? describe(failure) : String(failure));
    return;
  }
  const role = data.viewer.actor.role;
  if (!CONSOLE_USERS.has(role)) {
    if (token === SESSION) await postSession("/auth/sign-out");
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(`${CONSOLE_ROLES} This token is ${article(role)} ${role.toLowerCase()}'s. (FORBIDDEN)`);
    return;
  }
  if (token !== SESSION) sessionStorage.setItem(TOKEN_KEY, token);
  state.viewer = data.viewer;
  state.queues = STAFF.has(role) ? (await ask(LOAD_ALL_QUEUES)).queues : data.viewer.queues;
  document.body.classList.add("signed-in");
  who.textContent = `${data.viewer.actor.name} (${data.viewer.actor.role.toLowerCase()})`;
  say("");
  signInScreen = null;
  state.live = new LiveConnection(token, showLiveStatus);
  await loadTasks(firstPage);
  route();
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
  leaveViews();
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
  showSignIn(message, endSessionUrl);
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

// ---------------------------------------------------------------- routing and live events

function route() {
  if (!state.token) return;
  const before = state.route;
  state.route = parse();
  leaveViews(state.route.name);
  if (state.route.name === "task") {
    showTask(state.route.params.id);
    return;
  }
  if (LATER[state.route.name]) {
    showLater(state.route);
    return;
  }
  showTasks(state.route.params.queue, state.route.query);
  // A new filter of the same list leaves the keyboard on the filter; a new list starts
  // at its heading.
  const sameList = before.name === "tasks" && before.params.queue === state.route.params.queue;
  if (!sameList || !main.contains(document.activeElement)) focusHeading();
}

// A live event draws again what it concerns: the task page of its task or proposal, the
// list, the operations page's figures, the incident page of its proposal, or a proposal's
// story; the history stays as it is.
async function showLater(route) {
  const later = LATER[route.name];
  if (!loaded[route.name]) {
    redraw(); // "Loading…" while its module comes
    try {
      loaded[route.name] = await later.load();
    } catch (failure) {
      say(`This page could not be loaded (${failure.message}); reload to try again.`);
      return;
    }
    if (state.route !== route) return; // the reader moved on meanwhile
  }
  later.show(loaded[route.name], route);
}

function followEvent(event) {
  const shown = state.openTask;
  if (shown && (event.entityId === shown.id || (shown.proposal && event.proposalId === shown.proposal.id))) {
    refreshTask(shown.id);
  } else if (!shown && state.route.name === "tasks") {
    redraw();
  } else if (LATER[state.route.name]?.event && loaded[state.route.name]) {
    LATER[state.route.name].event(loaded[state.route.name], event, state.route);
  }
}

// More of the list has been read, or all of it.
function listChanged() {
  if (state.route.name === "tasks") redraw();
}

// The list's ages and times left are words ("5 minutes ago"): drawn again now and then,
// they stay true while nothing else happens.
const RETELL_MS = 30_000;
setInterval(() => {
  if (state.token && !signInScreen && state.route.name === "tasks") redraw();
}, RETELL_MS);

// ---------------------------------------------------------------- keys

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
  const tasks = listed().rows;
  if (!tasks.length) return;
  const at = state.openTask ? tasks.findIndex((t) => t.id === state.openTask.id) : -1;
  const next = tasks[(at + 1) % tasks.length];
  go(href("task", { id: next.id }));
}

function onKey(event) {
  if (!state.token || event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) return;
  if (help.open) return;
  const onTask = onTaskPage();
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
      go(href("tasks", { queue: state.selectedQueue }, state.listQuery));
      break;
    case "h":
      go(href("history"));
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
    case "r":
      rejectFromKeyboard();
      break;
    case "?":
      help.showModal();
      break;
    default:
      return;
  }
  event.preventDefault();
}

// ---------------------------------------------------------------- start

listen({ redraw, signOut, event: followEvent, route, listChanged });
document.getElementById("sign-out").addEventListener("click", () => signOut(""));
document.getElementById("help-button").addEventListener("click", () => help.showModal());
document.getElementById("help-close").addEventListener("click", () => help.close());
window.addEventListener("hashchange", () => {
  say(""); // a notice is about the page it was given on
  route();
});
document.addEventListener("keydown", onKey);

function start() {
  const { session, options, token, first } = beginning;
  signInOptions = options;
  if (token) signIn(token, first);
  else showSignIn(session.ended || "");
}

start();
