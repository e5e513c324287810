"""The hot documents (the API bench's page and proposal, the console's task list, task and
proposal) answer the same JSON, errors and their codes included, whether relations are
completed in place or by graphql-core, for every role and for a caller without a token."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from signoff.models import Role
from signoff.schema.serving.execution import PlainFieldExecutor
from tests.helpers import GraphQLClient, build_world

CONSOLE = Path(__file__).parents[2] / "signoff/static/console"
# start.js holds the first screen's documents (it sends them before any module runs).
CONSOLE_QUERIES = (CONSOLE / "start.js", CONSOLE / "queries.js")
SELECTION = """id state actionCode subject payload payloadDigest requiredApprovals
approvalCount expiresAt createdAt target { id name approvalMode }
approvals { id decision payloadDigest createdAt approver { id name } }
task { id state priority }"""
PAGE = "query Page { proposals(first: 20) { edges { cursor node { " + SELECTION + " } } } }"
ONE = "query One($id: ID!) { proposal(id: $id) { " + SELECTION + " } }"


def console_documents() -> dict[str, str]:
    """The console's documents by their constant's name, template literals filled in."""
    text = "\n".join(path.read_text() for path in CONSOLE_QUERIES)
    found: dict[str, str] = {}
    constants = re.findall(r'const (\w+) = ([`"])(.*?)\2;', text, flags=re.DOTALL)
    for name, _quote, body in constants:
        found[name] = re.sub(r"\$\{(\w+)\}", lambda m: found[m.group(1)], body)
    return found


async def _answers(gql: GraphQLClient, cases: list[tuple[str, dict[str, Any], str | None]]) -> Any:
    return [
        await gql.comparable(document, variables, token) for document, variables, token in cases
    ]


async def test_hot_documents_answer_alike_with_relations_in_place_or_not(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = await build_world(gql, required_approvals=3)
    operator = await gql.token(Role.OPERATOR, name="operator")
    made = [(await world.propose())["proposal"] for _ in range(4)]
    for reviewer in world.reviewers:
        await world.decide(reviewer, made[0])
    await world.decide(world.reviewers[0], made[1], decision="REJECTED")
    tasks = await gql("{ tasks(first: 10) { nodes { id } } }", {}, world.admin)
    task_id = tasks["tasks"]["nodes"][0]["id"]
    console = console_documents()
    documents = [
        (PAGE, {}),
        (ONE, {"id": made[0]["id"]}),
        (console["LOAD_TASKS"], {}),
        (console["LOAD_TASK"], {"id": task_id}),
        (console["LOAD_PROPOSAL"], {"id": made[1]["id"]}),
    ]
    tokens = [world.admin, operator, world.reviewers[0], world.agent, None]
    cases = [(doc, variables, token) for doc, variables in documents for token in tokens]

    in_place = await _answers(gql, cases)
    original = PlainFieldExecutor.__init__

    def by_graphql_core(self: PlainFieldExecutor, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.relations_in_place = False

    monkeypatch.setattr(PlainFieldExecutor, "__init__", by_graphql_core)
    assert await _answers(gql, cases) == in_place
    # The documents were answered, not refused: relations were there to complete.
    assert in_place[0][1]["data"]["proposals"]["edges"][0]["node"]["target"]["name"]
    assert len(in_place[len(tokens)][1]["data"]["proposal"]["approvals"]) == 2
    # And refusals were among the answers, with their codes.
    assert any(e["extensions"]["code"] for _, body in in_place for e in body.get("errors", []))
