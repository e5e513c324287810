"""A LangGraph graph that stops for a person's approval with ``interrupt()``, asked of
Signoff, and goes on when the run is resumed with Signoff's decision.

The graph plans a refund for a ticket (a scripted stand-in for a model: no network, no
key), then its ``approval`` node calls ``interrupt()`` with the proposed payload. The
driver proposes it to Signoff, waits for the decision (accepting an amendment) and
resumes with ``Command(resume=...)``: approved with the payload as approved (amended or
not) or rejected with the reason. Run it with SIGNOFF_URL and SIGNOFF_TOKEN set; see
README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any, Literal, NotRequired

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt
from signoff_client import Amended, Applied, Approved, AsyncSignoff, Proposal
from typing_extensions import TypedDict  # pydantic validates the resume value with it


class Decision(TypedDict):
    """What the run is resumed with: Signoff's decision on the proposed refund."""

    status: Literal["approved", "rejected", "expired"]
    proposal_id: str
    payload: dict[str, Any]
    reason: str | None
    amended: bool


class Ticket(TypedDict):
    ticket: str
    refund: NotRequired[dict[str, Any]]
    decision: NotRequired[Decision]
    line: NotRequired[str]


def plan(ticket: str) -> dict[str, Any]:
    """The model's stand-in: the refund it would propose for a ticket."""
    amount = 40 + 10 * sum(map(ord, ticket)) % 90
    return {"amount": amount, "currency": "EUR"}


def build(signoff: AsyncSignoff, proposals: dict[str, Proposal]) -> CompiledStateGraph[Any]:
    """The graph: plan, stop for approval, then follow the approved refund's delivery."""

    def planning(state: Ticket) -> dict[str, Any]:
        return {"refund": plan(state["ticket"])}

    def approval(state: Ticket) -> dict[str, Any]:
        request = {"payload": state["refund"], "subject": {"ticket": state["ticket"]}}
        return {"decision": interrupt(request, response_schema=Decision)}

    async def delivery(state: Ticket) -> dict[str, Any]:
        decision = state["decision"]
        if decision["status"] != "approved":
            reason = decision["reason"] or "no reason given"
            return {"line": f"refund not made ({decision['status']}: {reason})"}
        # Signoff delivers the approved refund to its target: follow how that ends.
        outcome = await proposals[decision["proposal_id"]].wait(timeout=600)
        refund = f"refund of {decision['payload']['amount']} {decision['payload']['currency']}"
        amended = " (as amended)" if decision["amended"] else ""
        if isinstance(outcome, Applied):
            return {"line": f"{refund} applied{amended}"}
        return {"line": f"{refund} {outcome.kind}"}

    graph = StateGraph(Ticket)
    graph.add_node("planning", planning)
    graph.add_node("approval", approval)
    graph.add_node("delivery", delivery)
    graph.add_edge(START, "planning")
    graph.add_edge("planning", "approval")
    graph.add_edge("approval", "delivery")
    graph.add_edge("delivery", END)
    return graph.compile(checkpointer=InMemorySaver())


async def decide(
    signoff: AsyncSignoff, target: str, request: dict[str, Any], proposals: dict[str, Proposal]
) -> Decision:
    """Propose what the graph asks approval for and wait for Signoff's decision."""
    proposal = await signoff.propose(target, request["payload"], subject=request["subject"])
    proposals[proposal.id] = proposal
    outcome = await proposal.wait(timeout=3600)
    amended = isinstance(outcome, Amended)
    if isinstance(outcome, Amended):
        await proposal.accept_amendment(outcome.payload_digest)
        outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Approved):
        return Decision(
            status="approved",
            proposal_id=proposal.id,
            payload=outcome.payload,
            reason=None,
            amended=amended,
        )
    return Decision(
        status="expired" if outcome.kind == "expired" else "rejected",
        proposal_id=proposal.id,
        payload=proposal.state.payload,
        reason=getattr(outcome, "reason", None),
        amended=amended,
    )


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Run the graph for a ticket, resuming each interrupt with Signoff's decision."""
    proposals: dict[str, Proposal] = {}
    graph = build(signoff, proposals)
    config: RunnableConfig = {"configurable": {"thread_id": ticket}}
    state = await graph.ainvoke(Ticket(ticket=ticket), config)
    while state.get("__interrupt__"):
        request = state["__interrupt__"][0].value
        decision = await decide(signoff, target, request, proposals)
        state = await graph.ainvoke(Command(resume=decision), config)
    return f"{ticket}: {state['line']}"


async def main(target: str, tickets: list[str]) -> None:
    async with AsyncSignoff.from_env() as signoff:
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--ticket", action="append", required=True, help="a ticket id")
    args = parser.parse_args()
    asyncio.run(main(args.target, args.ticket))
