// The tests' agent (tests/client/test_typescript.py): each step's outcome printed as a JSON
// line. SIGNOFF_URL and SIGNOFF_TOKEN name the server and the agent; the argument is the
// target's name (a target without a url: the agent executes it).
import { PayloadSchemaInvalid, Signoff, AlreadyExecuted } from "signoff-approvals-client";

const say = (line) => console.log(JSON.stringify(line));
const signoff = new Signoff({ url: process.env.SIGNOFF_URL, token: process.env.SIGNOFF_TOKEN });
const target = process.argv[2];

try {
  await signoff.propose(target, { amount: "many", currency: "EUR" });
} catch (error) {
  say({ refused: error.code, typed: error instanceof PayloadSchemaInvalid, pointer: error.problems[0]?.pointer });
}
const proposal = await signoff.propose(target, { amount: 120, currency: "EUR" }, { subject: { ticket: "T-1" }, key: "T-1" });
say({ proposed: proposal.id, state: proposal.state });
let ran = 0;
const refund = ({ amount, currency }) => {
  ran += 1;
  return `refunded ${amount} ${currency}`;
};
say({ executed: await signoff.execute(proposal, refund, { timeoutMs: 60000 }) });
const again = await signoff.propose(target, { amount: 120, currency: "EUR" }, { subject: { ticket: "T-1" }, key: "T-1" });
say({ replayed: again.replayed, again: await signoff.execute(again, refund), ran });
const other = await signoff.propose(target, { amount: 5, currency: "EUR" });
say({ proposed: other.id });
try {
  await signoff.execute(other, refund, { timeoutMs: 60000 });
} catch (error) {
  say({ notApproved: error.code, outcome: error.outcome?.kind, reason: error.outcome?.reason, ran });
}
try {
  await signoff.request(`mutation($i: BeginExecutionInput!) { beginExecution(input: $i) { lease } }`, {
    i: { proposalId: proposal.id, payloadDigest: proposal.payloadDigest },
  });
} catch (error) {
  say({ consumed: error.code, state: error.extensions.state, isAlready: error instanceof AlreadyExecuted });
}
