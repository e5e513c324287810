// Runs GraphQL-over-HTTP's own audit (graphql-http's auditServer) against a server and
// prints one JSON line per check: {"id", "name", "status", "reason"}.
import { auditServer } from 'graphql-http';

const [url, token] = process.argv.slice(2);
const fetchWithToken = (input, init = {}) => {
  const headers = new Headers(init.headers);
  if (token) headers.set('authorization', `Bearer ${token}`);
  return fetch(input, { ...init, headers });
};
const results = await auditServer({ url, fetchFn: fetchWithToken });
for (const result of results) {
  const line = { id: result.id, name: result.name, status: result.status };
  if (result.status !== 'ok') line.reason = result.reason;
  console.log(JSON.stringify(line));
}
