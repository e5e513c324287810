// The tests' agent for a dropped socket (tests/client/test_typescript.py): proposes, says
// so, then waits for the decision; the test cuts the connection meanwhile and decides while
// it is cut, so the decision arrives only if the client resumes after its last cursor.
import { Signoff } from "signoff-approvals-client";

const say = (line) => console.log(JSON.stringify(line));
const signoff = new Signoff({ url: process.env.SIGNOFF_URL, token: process.env.SIGNOFF_TOKEN });
const proposal = await signoff.propose(process.argv[2], { amount: 120, currency: "EUR" });
say({ proposed: proposal.id });
const outcome = await signoff.wait(proposal, { timeoutMs: 60000 });
say({ outcome: outcome.kind, payload: outcome.payload });
// After a cut, something the client opened keeps Node alive for a while once wait() has
// returned (not yet found); end the script when its work is done.
process.exit(0);
