"""A LangGraph graph that stops for a person's approval with ``interrupt()``, asked of
Signoff with ``signoff_client.langgraph``: the run is resumed with Signoff's decision
(the payload as approved, amended or not, or the reason it was rejected). The planning
node is a scripted stand-in for a model: no network, no key. See README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from typing import Any, NotRequired

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from signoff_client import Applied, Approved, AsyncSignoff
from signoff_client.langgraph import ApprovalRequest, Decision, approval, resume
from signoff_client.targets import TargetNeeds, TargetNotReady, register_target, require_target
from typing_extensions import TypedDict

REFUND = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}
# What this recipe needs of its target (README.md says it in words): a reviewer deciding
# every refund, with no approval policy; amendments the agent accepts before they are
# decided; Signoff delivering what is approved to a url.
NEEDS = TargetNeeds(input_schema=REFUND)


class Ticket(TypedDict):
    ticket: str
    refund: NotRequired[dict[str, Any]]
    decision: NotRequired[Decision]
    line: NotRequired[str]


def plan(ticket: str) -> dict[str, Any]:
    """The model's stand-in: the refund it would propose for a ticket."""
    amount = 40 + 10 * sum(map(ord, ticket)) % 90
    return {"amount": amount, "currency": "EUR"}


def asked(state: Ticket) -> ApprovalRequest:
    return {"payload": state["refund"], "subject": {"ticket": state["ticket"]}}


def build(signoff: AsyncSignoff) -> CompiledStateGraph[Any]:
    """Plan, stop for approval, then follow the approved refund's delivery."""

    async def delivery(state: Ticket) -> dict[str, Any]:
        decision = state["decision"]
        if decision["status"] != "approved":
            reason = decision["reason"] or "no reason given"
            return {"line": f"refund not made ({decision['status']}: {reason})"}
        # Signoff delivers the approved refund to its target: follow how that ends.
        proposal = await signoff.proposal(decision["proposal_id"])
        outcome = await proposal.wait(timeout=600)  # approved, then how delivery ended
        if isinstance(outcome, Approved):
            outcome = await proposal.wait(timeout=600)
        refund = f"refund of {decision['payload']['amount']} {decision['payload']['currency']}"
        done = "applied" if isinstance(outcome, Applied) else outcome.kind
        return {"line": f"{refund} {done}{' (as amended)' if decision['amended'] else ''}"}

    graph = StateGraph(Ticket)
    graph.add_node("planning", lambda state: {"refund": plan(state["ticket"])})
    graph.add_node("approval", approval(asked))
    graph.add_node("delivery", delivery)
    graph.add_edge(START, "planning")
    graph.add_edge("planning", "approval")
    graph.add_edge("approval", "delivery")
    graph.add_edge("delivery", END)
    return graph.compile(checkpointer=InMemorySaver())


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Run the graph for a ticket, each interrupt resumed with Signoff's decision."""
    config: RunnableConfig = {"configurable": {"thread_id": f"{ticket}-{uuid.uuid4().hex}"}}
    state = await resume(build(signoff), signoff, target, config, Ticket(ticket=ticket))
    return f"{ticket}: {state['line']}"


async def main(target: str, tickets: list[str]) -> None:
    async with AsyncSignoff.from_env() as signoff:
        await require_target(signoff, target, NEEDS)
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


async def register(target: str, queue: str | None, url: str | None) -> None:
    """Register the target this recipe needs (SIGNOFF_TOKEN: an admin's token)."""
    async with AsyncSignoff.from_env() as signoff:
        print((await register_target(signoff, target, NEEDS, queue=queue, url=url)).line())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", nargs="?", choices=["register"], help="register its target")
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--queue", help="register: the slug of the queue reviewing it")
    parser.add_argument("--url", help="register: where approved refunds are delivered")
    parser.add_argument("--ticket", action="append", default=[], help="a ticket id")
    args = parser.parse_args()
    step = (
        register(args.target, args.queue, args.url) if args.step else main(args.target, args.ticket)
    )
    try:
        asyncio.run(step)
    except TargetNotReady as missing:
        raise SystemExit(missing.message) from None
