"""LangGraph's ``interrupt()`` answered by Signoff (the ``langgraph`` extra).

``approval`` is a node that stops the graph with ``interrupt()``, handing out what to
approve (``ApprovalRequest``); ``resume`` runs a graph until it ends, proposing each such
request to Signoff and resuming the run with ``Command(resume=decision)``. The proposal's
operation key is the thread's id and the interrupt's, so a run resumed by another process
(a persistent checkpointer holds the graph's state) finds the proposal made before, and
its decision, instead of asking again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict  # pydantic validates the resume value with it

from signoff_client.client import AsyncSignoff
from signoff_client.outcomes import Amended, Approved

__all__ = ["ApprovalRequest", "Decision", "approval", "resume"]

S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)


class ApprovalRequest(TypedDict):
    """What a graph asks approval for: a payload, and the subject it concerns."""

    payload: dict[str, Any]
    subject: dict[str, Any]


class Decision(TypedDict):
    """What the run is resumed with: Signoff's decision on the request."""

    status: Literal["approved", "rejected", "expired"]
    proposal_id: str
    payload: dict[str, Any]
    reason: str | None
    amended: bool


class Node(Protocol[S_contra]):
    """A graph node, as LangGraph calls it (by its ``state`` argument)."""

    def __call__(self, state: S_contra) -> dict[str, Any]: ...


def approval(request: Callable[[S], ApprovalRequest], into: str = "decision") -> Node[S]:
    """A node that stops for approval of ``request(state)`` and puts the decision into
    the state's ``into`` key once the run is resumed."""

    def node(state: S) -> dict[str, Any]:
        decision: Decision = interrupt(request(state), response_schema=Decision)
        return {into: decision}

    return node


async def resume(
    graph: Any,
    signoff: AsyncSignoff,
    target: str,
    config: RunnableConfig,
    first: Any = None,
    *,
    timeout: float | None = 3600.0,  # noqa: ASYNC109 - each wait's, not the call's
    accept_amendments: bool = True,
) -> Mapping[str, Any]:
    """Run ``graph`` (from ``first``, or on from its checkpoint when ``None``) until it
    ends, answering each approval interrupt with Signoff's decision; its final state."""
    state = await graph.ainvoke(first, config)
    while state.get("__interrupt__"):
        pending = state["__interrupt__"][0]
        decision = await decide(
            signoff,
            target,
            pending.value,
            key=f"langgraph:{config['configurable']['thread_id']}:{pending.id}",
            timeout=timeout,
            accept_amendments=accept_amendments,
        )
        state = await graph.ainvoke(Command(resume=decision), config)
    return dict(state)


async def decide(
    signoff: AsyncSignoff,
    target: str,
    request: ApprovalRequest,
    *,
    key: str,
    timeout: float | None,  # noqa: ASYNC109 - each wait's, not the call's
    accept_amendments: bool,
) -> Decision:
    """Propose ``request`` under ``key`` and wait for Signoff's decision."""
    proposal = await signoff.propose(
        target, request["payload"], subject=request["subject"], key=key[:200]
    )
    outcome = await proposal.wait(timeout)
    amended = isinstance(outcome, Amended)
    if isinstance(outcome, Amended) and accept_amendments:
        await proposal.accept_amendment(outcome.payload_digest)
        outcome = await proposal.wait(timeout)
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
        payload=dict(proposal.state.payload),
        reason=getattr(outcome, "reason", None),
        amended=amended,
    )
