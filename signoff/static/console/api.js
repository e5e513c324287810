// Talking to Signoff's GraphQL API: queries and mutations over HTTP, subscriptions over
// one graphql-transport-ws connection that comes back after a drop and resumes every
// subscription from the last cursor it delivered (`after`), so nothing is missed. Where
// the websocket cannot be opened at all (a proxy that refuses upgrades), the same
// subscriptions travel over one Server-Sent Events stream (graphql-sse's single
// connection mode) instead.

/**
 * The "token" of a console signed in through the identity provider: requests then carry
 * the HttpOnly session cookie (which this page cannot read) and the session's CSRF token,
 * never a bearer token.
 */
export const SESSION = Symbol("console session");
let csrfToken = null;

/** Sign-in with the identity provider: `csrf` is the session's CSRF token (null: none). */
export function useSession(csrf) {
  csrfToken = csrf;
}

// How a request is sent and signed is start.js's (the page runs it first, and its first
// requests are sent the same way).
const { ENDPOINT, credentials, post } = window.signoffStart;

/** What start.js signs a request made with `token` with. */
function authFor(token) {
  return token === SESSION ? { csrf: csrfToken } : { bearer: token };
}

function credentialsFor(token) {
  return credentials(authFor(token));
}

/** POST to one of the console's /auth endpoints with the session's CSRF token. */
export async function postSession(path) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "X-CSRF-Token": csrfToken || "", Accept: "application/json" },
    credentials: "same-origin",
    cache: "no-store",
  });
  return response.json();
}

/** A GraphQL error the server gave a stable code for (or a transport failure). */
export class Refusal extends Error {
  constructor(code, message, extensions = {}) {
    super(message);
    this.code = code;
    this.extensions = extensions;
  }
}

/** Run a query or mutation; resolve to its data, or reject with a Refusal. */
export function request(token, query, variables = {}) {
  return answerOf(post(authFor(token), query, variables));
}

/** What a request's `response` (a promise of it) answered: its data, or a Refusal. */
export async function answerOf(response) {
  let answer;
  try {
    answer = await response;
  } catch (failure) {
    throw new Refusal("NETWORK", String(failure));
  }
  let body;
  try {
    body = await answer.json();
  } catch (notJson) {
    throw new Refusal(answer.status === 413 ? "REQUEST_TOO_LARGE" : "NETWORK", String(notJson));
  }
  if (body.errors && body.errors.length) {
    const first = body.errors[0];
    const extensions = first.extensions || {};
    throw new Refusal(extensions.code || "INTERNAL", first.message, extensions);
  }
  return body.data;
}

// Reconnecting after a real drop: exponential from RETRY_FIRST_MS, capped at RETRY_MAX_MS,
// each delay drawn from its upper half so a restart's clients do not come back in step.
// A connection counts as healthy again only once it has stayed up for STABLE_MS, so a
// server that acknowledges and then drops at once is not retried in a tight loop.
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;
const STABLE_MS = 10_000;

/** How long to wait before reconnect attempt number `attempt` (0 for the first). */
export function retryDelay(attempt, random = Math.random) {
  const ceiling = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** attempt);
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

/**
 * One websocket for all subscriptions of a signed-in tab.
 * `onStatus(state, detail)` hears "connecting", "live", "reconnecting", "stopped" (the
 * server completed a subscription without a refusal: it is subscribed again, after the
 * reconnecting delays, from its last cursor) and "rejected" (the server closed with 4403:
 * the token is not accepted; nothing is retried).
 */
export class LiveConnection {
  constructor(token, onStatus) {
    this.token = token;
    this.onStatus = onStatus;
    this.subscriptions = new Map();
    this.nextId = 1;
    this.socket = null;
    this.acknowledged = false;
    this.closed = false;
    this.attempt = 0;
    this.liveSince = null;
    this.timer = null;
    this.open();
  }

  /**
   * Subscribe; `handlers.next(payload)` gets each event, `handlers.error(refusal)` a refusal
   * (the subscription is then over). `cursorOf(payload)` names the cursor to resume after.
   * Returns a function that ends the subscription.
   */
  subscribe(query, variables, handlers, cursorOf) {
    const id = String(this.nextId++);
    const entry = { query, variables: { ...variables }, handlers, cursorOf, stops: 0, since: null, timer: null };
    this.subscriptions.set(id, entry);
    if (this.acknowledged) this.start(id, entry);
    return () => {
      clearTimeout(entry.timer);
      if (!this.subscriptions.delete(id) || !this.acknowledged) return;
      if (this.stream) this.stream.stop(id);
      else this.send({ id, type: "complete" });
    };
  }

  start(id, entry) {
    clearTimeout(entry.timer);
    entry.timer = null;
    entry.since = Date.now();
    if (this.stream) this.stream.start(id, this.payload(entry));
    else this.send({ id, type: "subscribe", payload: this.payload(entry) });
  }

  /** The server ended a subscription this tab still wants: say so, and subscribe again. */
  stopped(id, entry) {
    if (entry.since !== null && Date.now() - entry.since >= STABLE_MS) entry.stops = 0;
    entry.since = null;
    const delay = retryDelay(entry.stops);
    entry.stops += 1;
    this.onStatus("stopped");
    entry.timer = setTimeout(() => {
      if (this.subscriptions.get(id) !== entry || !this.acknowledged) return; // a reconnect resubscribes it
      this.start(id, entry);
      this.onStatus("live");
    }, delay);
  }

  close() {
    this.closed = true;
    clearTimeout(this.timer);
    for (const entry of this.subscriptions.values()) clearTimeout(entry.timer);
    this.subscriptions.clear();
    if (this.socket) this.socket.close(1000, "signed out");
    if (this.stream) this.stream.close();
  }

  payload(entry) {
    return { query: entry.query, variables: entry.variables };
  }

  url() {
    const url = new URL(ENDPOINT, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    return url.href;
  }

  send(message) {
    if (this.socket && this.socket.readyState === WebSocket.OPEN) {
      this.socket.send(JSON.stringify(message));
    }
  }

  open() {
    this.acknowledged = false;
    this.onStatus(this.attempt === 0 ? "connecting" : "reconnecting");
    if (this.overEventStream) {
      this.stream = new EventStream(this.token, this);
      return;
    }
    const socket = new WebSocket(this.url(), "graphql-transport-ws");
    this.socket = socket;
    socket.addEventListener("open", () => {
      socket.opened = true;
      this.everOpened = true;
      // Signed in through the identity provider, the handshake's cookie is the credential.
      const payload = this.token === SESSION ? {} : { authorization: `Bearer ${this.token}` };
      socket.send(JSON.stringify({ type: "connection_init", payload }));
    });
    socket.addEventListener("message", (event) => this.receive(JSON.parse(event.data)));
    socket.addEventListener("close", (event) => this.lost(socket, event));
  }

  receive(message) {
    switch (message.type) {
      case "connection_ack":
        this.acknowledged = true;
        this.liveSince = Date.now();
        this.onStatus("live");
        for (const [id, entry] of this.subscriptions) this.start(id, entry);
        break;
      case "ping":
        this.send({ type: "pong" });
        break;
      case "next": {
        const entry = this.subscriptions.get(message.id);
        if (!entry) break;
        const result = message.payload || {};
        if (result.errors && result.errors.length) {
          this.refuse(message.id, entry, result.errors[0]);
          break;
        }
        const data = result.data || {};
        const payload = data[Object.keys(data)[0]];
        const cursor = entry.cursorOf(payload);
        if (cursor) entry.variables.after = cursor;
        entry.handlers.next(payload);
        break;
      }
      case "error": {
        const entry = this.subscriptions.get(message.id);
        if (entry) this.refuse(message.id, entry, (message.payload || [])[0] || {});
        break;
      }
      case "complete": {
        // A refused subscription is already gone; one this tab ended is not asked about.
        const entry = this.subscriptions.get(message.id);
        if (entry) this.stopped(message.id, entry);
        break;
      }
      default:
        break;
    }
  }

  refuse(id, entry, error) {
    this.subscriptions.delete(id);
    const extensions = error.extensions || {};
    entry.handlers.error(new Refusal(extensions.code || "INTERNAL", error.message, extensions));
  }

  lost(socket, event) {
    if (socket !== this.socket || this.closed) return;
    this.acknowledged = false;
    if (!socket.opened && !this.everOpened) {
      // The tab's first websocket was not let through, though the sign-in's requests
      // were: the upgrade is refused on the way. Server-Sent Events from now on.
      this.overEventStream = true;
      this.socket = null;
      this.open();
      return;
    }
    this.dropped(event.code);
  }

  /** The event stream ended or failed (`code` 4403: its reservation was refused). */
  streamLost(stream, code) {
    if (stream !== this.stream || this.closed) return;
    this.acknowledged = false;
    this.stream = null;
    this.dropped(code);
  }

  dropped(code) {
    if (code === 4403) {
      this.closed = true;
      this.onStatus("rejected", code);
      return;
    }
    if (this.liveSince !== null && Date.now() - this.liveSince >= STABLE_MS) this.attempt = 0;
    this.liveSince = null;
    const delay = retryDelay(this.attempt);
    this.attempt += 1;
    this.onStatus("reconnecting", code);
    this.timer = setTimeout(() => this.open(), delay);
  }
}

const STREAM_TOKEN_HEADER = "X-GraphQL-Event-Stream-Token";

/**
 * The subscriptions of a LiveConnection over one Server-Sent Events stream (graphql-sse's
 * single connection mode): PUT reserves it, GET reads it, each subscription is a POST with
 * the stream's token, DELETE ends one. Its events reach the connection as the websocket's
 * messages would (`connection_ack`, `next`, `complete`); a stream that ends or fails is
 * lost like a socket (a refused reservation like a 4403).
 */
class EventStream {
  constructor(token, connection) {
    this.auth = credentialsFor(token);
    this.connection = connection;
    this.controller = new AbortController();
    this.streamToken = null;
    this.run();
  }

  async run() {
    let code = 1006;
    try {
      const reserved = await this.fetch("PUT", {});
      if (reserved.status === 401 || reserved.status === 403) code = 4403;
      if (!reserved.ok) return;
      this.streamToken = await reserved.text();
      const response = await this.fetch("GET", { Accept: "text/event-stream" });
      if (!response.ok || !response.body) return;
      this.connection.receive({ type: "connection_ack" });
      await this.read(response.body.getReader());
    } catch (failure) {
      // The network, or this stream closed by the page: either way it is over.
    } finally {
      if (!this.controller.signal.aborted) this.connection.streamLost(this, code);
    }
  }

  async read(reader) {
    const decoder = new TextDecoder();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        this.dispatch(buffered.slice(0, end));
        buffered = buffered.slice(end + 2);
      }
    }
  }

  dispatch(block) {
    let event = "";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    if (event !== "next" && event !== "complete") return; // a heartbeat
    const message = JSON.parse(data.join("\n"));
    this.connection.receive({ type: event, id: message.id, payload: message.payload });
  }

  start(id, payload) {
    const body = JSON.stringify({ ...payload, extensions: { operationId: id } });
    this.fetch("POST", { "Content-Type": "application/json" }, body).catch(() => {});
  }

  stop(id) {
    this.fetch("DELETE", {}, undefined, `?operationId=${encodeURIComponent(id)}`).catch(() => {});
  }

  close() {
    this.controller.abort();
  }

  fetch(method, headers, body, query = "") {
    const streamHeader = this.streamToken ? { [STREAM_TOKEN_HEADER]: this.streamToken } : {};
    return fetch(ENDPOINT + query, {
      method,
      headers: { ...this.auth.headers, ...streamHeader, ...headers },
      body,
      credentials: this.auth.credentials,
      cache: "no-store",
      signal: this.controller.signal,
    });
  }
}
