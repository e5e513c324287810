// What the console knows: who is signed in, the tasks of their queues kept current by the
// live feed, and the view on screen. Views read it and ask `redraw()` after a change; the
// shell (app.js) says how to redraw and how to sign out (`listen`).

import { Refusal, request, retryDelay } from "./api.js";
import { describe, CONSOLE_ROLES } from "./messages.js";
import { filtersOf, listTasks } from "./listing.js";
import { LOAD_TASKS, MORE_TASKS, QUEUE_EVENTS } from "./queries.js";

export const LIVE_STATES = new Set(["OPEN", "CLAIMED"]);
// Refusals of the live feed that mean "start again from what the server has now".
const RESYNC_CODES = new Set(["INVALID_CURSOR", "CURSOR_EXPIRED", "SUBSCRIBER_TOO_SLOW"]);
// Refusals that mean this token may not use the console at all: retrying cannot help.
const ACCESS_CODES = new Set(["FORBIDDEN", "UNAUTHENTICATED"]);

export const state = {
  token: null,
  viewer: null,
  queues: [],
  tasks: new Map(), // id -> task (OPEN or CLAIMED only)
  versions: new Map(), // task id -> the newest entityVersion applied
  live: null,
  stopFeed: null,
  route: { name: "tasks", params: {}, query: new URLSearchParams() },
  selectedQueue: null,
  listQuery: new URLSearchParams(), // the task list's filters, kept while a task is open
  listRows: 50, // how many of the list's rows are drawn (views/tasks.js)
  openTask: null, // the task shown on the task page
  taskAsks: 0, // task page loads asked for so far, in order
  taskDrawn: 0, // the newest of them the task page was drawn from
  selected: new Set(), // proposal ids ticked in the list for a bulk decision
  resyncs: 0, // reloads of the list in a row with no event between them
  resyncTimer: null,
  loads: 0, // task list loads started, in order (a later one makes an earlier one moot)
  loadingMore: false, // the list's later pages are still being read
};

const shell = {
  redraw: () => {},
  signOut: () => {},
  event: () => {},
  route: () => {},
  listChanged: () => {},
};

/** The shell's part: how to draw the view, sign out, follow an event, route again. */
export function listen(handlers) {
  Object.assign(shell, handlers);
}

export function redraw() {
  shell.redraw();
}

export function signOut(message) {
  return shell.signOut(message);
}

const notice = () => document.getElementById("notice");

/** Tell the reader something in the page's notice ("" clears it). */
export function say(message, kind = "error") {
  const element = notice();
  element.textContent = message;
  element.className = `notice ${kind}`;
  element.hidden = !message;
}

/** Say why a request failed; a token no longer accepted signs the tab out. */
export function refused(failure) {
  if (failure instanceof Refusal) {
    say(describe(failure));
    if (failure.code === "UNAUTHENTICATED") signOut(describe(failure));
  } else {
    say(String(failure));
  }
}

/** A query or mutation as the signed-in viewer. */
export function ask(query, variables) {
  return request(state.token, query, variables);
}

export function role() {
  return state.viewer ? state.viewer.actor.role : null;
}

// ---------------------------------------------------------------- the live task list

/**
 * Load the open and claimed tasks, then follow the feed from the cursor they were read at.
 * Resolves once the first page of each is in (the list can be drawn); the rest is read
 * page by page after it (`state.loadingMore`), each page drawn as it comes, and the feed
 * followed from that cursor once all are in, so what changed meanwhile is applied over.
 */
export async function loadTasks(asked = null) {
  state.loads += 1;
  const load = state.loads;
  let data;
  try {
    data = await (asked || askFirstPage());
  } catch (failure) {
    refused(failure);
    return;
  }
  if (!state.live || load !== state.loads) return; // signed out, or loaded again, meanwhile
  state.tasks.clear();
  state.versions.clear();
  for (const task of [...data.open.nodes, ...data.claimed.nodes]) state.tasks.set(task.id, task);
  if (state.stopFeed) state.stopFeed();
  state.stopFeed = null;
  const rest = [
    ["OPEN", data.open.pageInfo],
    ["CLAIMED", data.claimed.pageInfo],
  ].filter(([, page]) => page.hasNextPage);
  state.loadingMore = rest.length > 0;
  if (!rest.length) {
    follow(data.changeFeedCursor);
    return;
  }
  loadRest(load, rest).then(() => {
    if (!state.live || load !== state.loads) return;
    state.loadingMore = false;
    follow(data.changeFeedCursor);
    shell.listChanged();
  });
}

/**
 * Ask for the list's first page now (sign-in asks for it beside the viewer, to be read by
 * `loadTasks` once the viewer may use the console): the answer, or the refusal, settles
 * there; a promise nobody reads again is not an unhandled rejection.
 */
export function askFirstPage() {
  const asked = ask(LOAD_TASKS);
  asked.catch(() => {}); // read (and reported) by loadTasks, when it is read at all
  return asked;
}

async function loadRest(load, lists) {
  for (const [taskState, first] of lists) {
    let page = first;
    while (page.hasNextPage) {
      let data;
      try {
        data = await ask(MORE_TASKS, { state: taskState, after: page.endCursor });
      } catch (failure) {
        refused(failure);
        return;
      }
      if (!state.live || load !== state.loads) return;
      for (const task of data.tasks.nodes) state.tasks.set(task.id, task);
      page = data.tasks.pageInfo;
      shell.listChanged();
    }
  }
}

function follow(cursor) {
  state.stopFeed = state.live.subscribe(
    QUEUE_EVENTS,
    { after: cursor },
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
      if (state.token) loadTasks().then(() => shell.route());
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
  shell.event(event);
}

/** The tasks of the chosen queue (all of them without one). */
export function queueTasks() {
  const tasks = [...state.tasks.values()];
  return state.selectedQueue ? tasks.filter((task) => task.queue.id === state.selectedQueue) : tasks;
}

/** The task list as the route's filters show it: its rows and each filter's count. */
export function listed(now = Date.now()) {
  return listTasks(queueTasks(), filtersOf(state.listQuery), now);
}

/** Put the keyboard on the view's heading (a view just opened). */
export function focusHeading() {
  const heading = document.getElementById("main").querySelector(".work h2, article h2, form h2");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true }); // at the view's top already: no layout asked for
  }
}
