"""An agent process for the tests: a LangGraph graph whose ``approval`` node is answered
by ``signoff_client.langgraph.resume``, its state kept on disk by LangGraph's own
file-backed checkpointer (``InMemorySaver`` over ``PersistentDict``), so that another
process can resume the run. Arguments: the target's name, the checkpoint directory, the
thread's id, and ``start`` (a new run) or ``resume`` (on from the checkpoint). With
``start`` it waits a second for the decision, then ends, still waiting; it prints one
JSON line of how the run stands. Run with SIGNOFF_URL and SIGNOFF_TOKEN set."""

from __future__ import annotations

import asyncio
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, NotRequired

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver, PersistentDict
from langgraph.graph import END, START, StateGraph
from signoff_client import AsyncSignoff, StillWaiting
from signoff_client.langgraph import ApprovalRequest, Decision, approval, resume
from typing_extensions import TypedDict


class Ticket(TypedDict):
    ticket: str
    refund: NotRequired[dict[str, Any]]
    decision: NotRequired[Decision]
    line: NotRequired[str]


def persisted(directory: Path) -> InMemorySaver:
    """A checkpointer whose three tables are pickled into ``directory`` when it closes and
    read back when it opens."""
    tables = iter(["storage", "writes", "blobs"])

    def table(*args: Any) -> defaultdict[Any, Any]:
        found = PersistentDict(*args, filename=str(directory / f"{next(tables)}.pickle"))
        if Path(found.filename).exists():
            found.load()
        return found

    return InMemorySaver(factory=table)  # type: ignore[arg-type]


def plan(state: Ticket) -> dict[str, Any]:
    """The refund to approve (a model's stand-in); each run of it is counted in the
    directory's ``plans``, to show a resumed run does not plan again."""
    with (DIRECTORY / "plans").open("a") as plans:
        plans.write(f"{state['ticket']}\n")
    return {"refund": {"amount": 120, "currency": "EUR"}}


def request(state: Ticket) -> ApprovalRequest:
    return ApprovalRequest(payload=state["refund"], subject={"ticket": state["ticket"]})


def report(state: Ticket) -> dict[str, Any]:
    decision = state["decision"]
    return {"line": f"{decision['status']} {decision['payload']['amount']}"}


def build(checkpointer: InMemorySaver) -> Any:
    graph = StateGraph(Ticket)
    graph.add_node("plan", plan)
    graph.add_node("approval", approval(request))
    graph.add_node("report", report)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "approval")
    graph.add_edge("approval", "report")
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer)


async def main(target: str, thread: str, start: bool) -> dict[str, Any]:
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    first = Ticket(ticket="T-1") if start else None
    async with AsyncSignoff.from_env() as signoff:
        with persisted(DIRECTORY) as checkpointer:
            graph = build(checkpointer)
            try:
                state = await resume(
                    graph, signoff, target, config, first, timeout=1 if start else 30
                )
            except StillWaiting as waiting:
                return {"waiting": waiting.proposal_id}
    return {"decision": state["decision"], "line": state["line"]}


if __name__ == "__main__":
    DIRECTORY = Path(sys.argv[2])
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[3], sys.argv[4] == "start"))))
