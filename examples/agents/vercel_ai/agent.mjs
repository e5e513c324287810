// A Vercel AI SDK agent whose `refund` tool has `needsApproval: true`, the approval asked of
// Signoff: each tool-approval-request's call is proposed, the reviewer's decision becomes the
// tool-approval-response, and the approved tool runs the refund once (beginExecution, then
// reportExecution) with the payload as approved. The model is the SDK's MockLanguageModelV4,
// scripted: no network, no key. `register` makes the target it needs (an admin's token).
// See README.md here.
import { parseArgs } from "node:util";
import { generateText, jsonSchema, tool } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { Signoff } from "signoff-approvals-client";

const REFUND = {
  type: "object",
  properties: { amount: { type: "integer", minimum: 1 }, currency: { type: "string" } },
  required: ["amount", "currency"],
};
// What this recipe needs of its target: no url (the agent runs the refund itself, once per
// approval), a reviewer deciding every refund, amendments the reviewer makes approved as
// amended (no acceptance step: the tool runs with the payload as approved).
const TARGET = {
  approvalMode: "HUMAN",
  inputSchema: REFUND,
  requiredApprovals: 1,
  amendable: true,
  amendmentsNeedProposer: false,
};

/** The target is missing or not as needed: said in one line, without a stack. */
class TargetNotReady extends Error {}

const TARGETS = `query { targets { name agentExecutes requiredApprovals approvalPolicy amendable
  amendmentsNeedProposer active } }`;

/** How an existing target differs from what this recipe needs (nothing: it will do). */
function differences(target) {
  const wanted = {
    agentExecutes: true,
    requiredApprovals: TARGET.requiredApprovals,
    approvalPolicy: null,
    amendable: TARGET.amendable,
    amendmentsNeedProposer: TARGET.amendmentsNeedProposer,
    active: true,
  };
  return Object.entries(wanted)
    .filter(([field, value]) => target[field] !== value)
    .map(([field, value]) => `${field} is ${JSON.stringify(target[field])}, not ${JSON.stringify(value)}`);
}

/** The target of that name, or null; one that is not as needed stops the recipe. */
async function existing(signoff, name) {
  const found = (await signoff.request(TARGETS)).targets.find((target) => target.name === name);
  const differs = found ? differences(found) : [];
  if (differs.length) throw new TargetNotReady(`Target ${name} is not as this recipe needs: ${differs.join("; ")}.`);
  return found ?? null;
}

/** Register the target unless one of that name is there as needed (an admin's token). */
async function register(signoff, name, queue) {
  if (await existing(signoff, name)) return `${name}: already registered`;
  const { queues } = await signoff.request("query { queues { id slug } }");
  const found = queues.find((candidate) => candidate.slug === queue);
  if (!found) throw new TargetNotReady(`no queue ${JSON.stringify(queue)}`);
  await signoff.request(
    `mutation($input: RegisterTargetInput!) { registerTarget(input: $input) { target { id } } }`,
    { input: { ...TARGET, name, queueId: found.id } },
  );
  return `${name}: registered`;
}

/** The refund the model would propose for a ticket. */
function plan(ticket) {
  const sum = [...ticket].reduce((total, char) => total + char.charCodeAt(0), 0);
  return { amount: 40 + ((10 * sum) % 90), currency: "EUR" };
}

const usage = {
  inputTokens: { total: 0, noCache: 0, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 0, text: 0, reasoning: 0 },
};

/** The model's stand-in: call `refund` with the plan, then say what the tool answered. */
const model = new MockLanguageModelV4({
  doGenerate: async ({ prompt }) => {
    const parts = prompt.filter((m) => m.role === "tool").flatMap((m) => m.content);
    const answer = parts.findLast((part) => part.type === "tool-result");
    if (answer) {
      const { output } = answer;
      const text = output.type === "execution-denied" ? `not approved (${output.reason})` : output.value;
      return { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
    }
    const ticket = prompt.find((m) => m.role === "user").content[0].text;
    const call = {
      type: "tool-call",
      toolCallId: `c-${ticket}-${Math.random().toString(16).slice(2, 10)}`,
      toolName: "refund",
      input: JSON.stringify(plan(ticket)),
    };
    return { content: [call], finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
  },
});

/** One ticket's run: its approval requests answered from Signoff, the refund run once. */
async function handle(signoff, target, ticket) {
  const proposals = new Map(); // tool call id -> its proposal
  const tools = {
    refund: tool({
      description: "Refund the customer.",
      inputSchema: jsonSchema(REFUND),
      needsApproval: true,
      execute: async (input, { toolCallId }) => {
        const refund = ({ amount, currency }) => {
          const amended = amount !== input.amount ? " (as amended)" : "";
          return `refund of ${amount} ${currency} applied${amended}`;
        };
        return signoff.execute(proposals.get(toolCallId), refund);
      },
    }),
  };
  const messages = [{ role: "user", content: ticket }];
  for (;;) {
    const result = await generateText({ model, tools, messages });
    messages.push(...result.response.messages);
    const requests = result.content.filter((part) => part.type === "tool-approval-request");
    if (requests.length === 0) return `${ticket}: ${result.text}`;
    const answers = [];
    for (const { approvalId, toolCall } of requests) {
      const proposal = await signoff.propose(target, toolCall.input, { subject: { ticket } });
      proposals.set(toolCall.toolCallId, proposal);
      answers.push({ type: "tool-approval-response", approvalId, ...(await decision(signoff, proposal)) });
    }
    messages.push({ role: "tool", content: answers });
  }
}

/** Signoff's decision on a proposal, as a tool-approval-response's `approved` and `reason`. */
async function decision(signoff, proposal) {
  const outcome = await signoff.wait(proposal, { timeoutMs: 3_600_000 });
  if (outcome.kind === "approved") return { approved: true };
  const why = outcome.reason ? `: ${outcome.reason}` : "";
  return { approved: false, reason: `${outcome.kind}${why}` };
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    target: { type: "string" },
    queue: { type: "string" },
    ticket: { type: "string", multiple: true, default: [] },
  },
});
const signoff = new Signoff({ url: process.env.SIGNOFF_URL, token: process.env.SIGNOFF_TOKEN });
try {
  if (positionals[0] === "register") {
    console.log(await register(signoff, values.target, values.queue));
  } else {
    if (!(await existing(signoff, values.target))) {
      throw new TargetNotReady(
        `No target ${values.target}: an admin registers it first, with this script's ` +
          "`register --target <name> --queue <slug>` and an admin's token (see README.md).",
      );
    }
    await Promise.all(
      values.ticket.map(async (ticket) => console.log(await handle(signoff, values.target, ticket))),
    );
  }
} catch (error) {
  if (!(error instanceof TargetNotReady)) throw error;
  console.error(error.message);
  process.exitCode = 2;
}
