// graphql-sse's own client, unmodified, subscribing to a server: one JSON line per thing
// it hears ({"type": "next", "value"}, {"type": "error", ...}, {"type": "complete"},
// {"type": "connected", "reconnected"}). After a cut it reconnects, sending the cursor of
// the last event it received as Last-Event-ID (the client's `headers` option).
//
// node sse.mjs '{"url", "token", "single", "query", "variables", "field", "retries"}'
import { createClient, NetworkError } from 'graphql-sse';

const { url, token, single, query, variables, field, retries } = JSON.parse(process.argv[2]);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
let lastCursor = null;

const client = createClient({
  url,
  singleConnection: single,
  headers: () => {
    const headers = { authorization: `Bearer ${token}` };
    if (lastCursor) headers['last-event-id'] = lastCursor;
    return headers;
  },
  // A cut stream is retried promptly (no backoff here). The client retries refusals of
  // single connection mode too (its reservation's refusal is a network error to it).
  retryAttempts: retries ?? 3,
  retry: () => new Promise((resolve) => setTimeout(resolve, 200)),
  on: { connected: (reconnected) => print({ type: 'connected', reconnected }) },
});

async function describe(error) {
  if (error instanceof NetworkError && error.response) {
    const { status } = error.response;
    let body = null;
    try {
      body = await error.response.json();
    } catch {
      body = null;
    }
    return { type: 'error', status, body };
  }
  return { type: 'error', message: String(error && error.message ? error.message : error) };
}

client.subscribe(
  { query, variables },
  {
    next: (value) => {
      const event = value && value.data && value.data[field];
      if (event && event.cursor) lastCursor = event.cursor;
      print({ type: 'next', value });
    },
    error: async (error) => {
      print(await describe(error));
      client.dispose();
    },
    complete: () => {
      print({ type: 'complete' });
      client.dispose();
    },
  },
);
