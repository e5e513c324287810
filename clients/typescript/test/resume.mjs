// The tests' agent for a dropped socket (tests/client/test_typescript.py): proposes, says
// so, then waits for the decision; the test cuts the connection meanwhile and decides while
// it is cut, so the decision arrives only if the client resumes after its last cursor. It
// says when the wait's first event came (the test cuts only then), prints the cursor of
// every event the wait saw (none twice, if it resumed where it left off), and ends by
// itself once the wait returned: nothing the client opened outlives it.
import { Signoff } from "signoff-approvals-client";

const say = (line) => console.log(JSON.stringify(line));
const signoff = new Signoff({ url: process.env.SIGNOFF_URL, token: process.env.SIGNOFF_TOKEN });
const proposal = await signoff.propose(process.argv[2], { amount: 120, currency: "EUR" });
say({ proposed: proposal.id });
const seen = [];
const outcome = await signoff.wait(proposal, {
  timeoutMs: 60000,
  onEvent: (event) => {
    if (seen.length === 0) say({ following: event.cursor });
    seen.push(event.cursor);
  },
});
say({ outcome: outcome.kind, payload: outcome.payload });
say({ events: seen.length, distinct: new Set(seen).size });
