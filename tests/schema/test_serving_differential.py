"""The served executor's short paths (plain fields, direct calls, relations completed in
place, shared collections: ``signoff.schema.serving``) answer random documents over random
data exactly as the reference does (the same schema run by Strawberry's executor as
graphql-core runs it): data, errors, their paths and codes, for every role and for a caller
without a token.

The documents are drawn from the schema itself, below the hot roots (``proposals``,
``proposal``, ``tasks``, ``task``): every field without arguments, with aliases, repeated
fields, inline and named fragments, ``__typename``, variables, ``@include`` and ``@skip``,
and arguments that are refused.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from graphql import (
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLSchema,
    GraphQLUnionType,
)
from starlette.applications import Starlette
from starlette.routing import WebSocketRoute

from signoff.internals import core_schema
from signoff.models import Role
from signoff.schema import build_schema
from tests.helpers import GraphQLClient, build_world

DEPTH = 3
DOCUMENTS = 24


@dataclass
class Draw:
    """One random document being written: its fragments and variables."""

    rng: random.Random
    schema: GraphQLSchema
    fragments: list[str] = field(default_factory=list)
    directives: bool = False

    def alias(self, name: str, taken: set[str]) -> str:
        """The field, under a fresh alias one time in four."""
        if self.rng.random() < 0.25:
            alias = f"a{len(taken)}_{name}"
            taken.add(alias)
            return f"{alias}: {name}"
        return name

    def directive(self) -> str:
        draw = self.rng.random()
        if draw < 0.06:
            self.directives = True
            return " @include(if: $yes)"
        if draw < 0.12:
            self.directives = True
            return " @skip(if: $no)"
        if draw < 0.15:
            self.directives = True
            return " @skip(if: $yes)"
        return ""

    def selection(self, named: GraphQLOutputType, depth: int) -> str:
        """A selection set of ``named`` (an object, interface or union type)."""
        rng = self.rng
        if isinstance(named, GraphQLUnionType | GraphQLInterfaceType):
            possible = list(self.schema.get_possible_types(named))
            parts = ["__typename"]
            for each in rng.sample(possible, k=min(len(possible), 3)):
                parts.append(f"... on {each.name} {{ {self.selection(each, depth)} }}")
            return " ".join(parts)
        assert isinstance(named, GraphQLObjectType)
        fields = [(name, each) for name, each in named.fields.items() if not each.args]
        leaves = [name for name, each in fields if _named(each.type) is None]
        objects = [(name, each) for name, each in fields if _named(each.type) is not None]
        taken: set[str] = set()
        parts = rng.sample(leaves, k=min(len(leaves), rng.randint(1, 6)))
        parts = [self.alias(name, taken) + self.directive() for name in parts]
        if rng.random() < 0.3:
            parts.append("__typename")
        if rng.random() < 0.2 and parts:
            parts.append(parts[0])  # the same field twice: merged into one
        if depth > 0 and objects:
            for name, each in rng.sample(objects, k=min(len(objects), rng.randint(0, 3))):
                inner = _named(each.type)
                assert inner is not None
                parts.append(
                    f"{self.alias(name, taken)}{self.directive()} "
                    f"{{ {self.selection(inner, depth - 1)} }}"
                )
        rng.shuffle(parts)
        return self.wrapped(named, " ".join(parts))

    def wrapped(self, named: GraphQLObjectType, body: str) -> str:
        """``body`` as it is, or in an inline fragment, or in a named fragment spread."""
        draw = self.rng.random()
        if draw < 0.15:
            return f"... on {named.name} {{ {body} }}"
        if draw < 0.22:
            return f"...{self.directive()} {{ {body} }}"
        if draw < 0.37:
            name = f"F{len(self.fragments)}"
            self.fragments.append(f"fragment {name} on {named.name} {{ {body} }}")
            return f"...{name}"
        return body


def _named(type_: GraphQLOutputType) -> GraphQLOutputType | None:
    """The object, interface or union type a field's type wraps (None for a leaf)."""
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType | GraphQLUnionType):
        return type_
    return None


def draw_document(
    rng: random.Random, schema: GraphQLSchema, ids: dict[str, list[str]]
) -> tuple[str, dict[str, Any]]:
    """A random document below one hot root, and its variables."""
    draw = Draw(rng, schema)
    proposal = schema.type_map["Proposal"]
    task = schema.type_map["HumanTask"]
    assert isinstance(proposal, GraphQLObjectType) and isinstance(task, GraphQLObjectType)
    root = rng.choice(["proposals", "proposal", "tasks", "task"])
    variables: dict[str, Any] = {}
    declared = []
    if root in ("proposals", "tasks"):
        node = proposal if root == "proposals" else task
        variables["first"] = rng.choice([1, 3, 20, 20, 100, 0, 101, None])
        declared.append("$first: Int")
        inner = []
        for part in rng.sample(["edges", "nodes", "pageInfo"], k=rng.randint(1, 3)):
            if part == "edges":
                inner.append(f"edges {{ cursor node {{ {draw.selection(node, DEPTH)} }} }}")
            elif part == "nodes":
                inner.append(f"nodes {{ {draw.selection(node, DEPTH)} }}")
            else:
                inner.append("pageInfo { hasNextPage endCursor }")
        body = f"{root}(first: $first) {{ {' '.join(inner)} }}"
    else:
        node = proposal if root == "proposal" else task
        kind = "proposals" if root == "proposal" else "tasks"
        variables["id"] = rng.choice([*ids[kind], *ids[kind], "missing", ids["other"][0]])
        declared.append("$id: ID!")
        body = f"{root}(id: $id) {{ {draw.selection(node, DEPTH)} }}"
    if rng.random() < 0.2:
        body += f" again: {root}" + body[len(root) :]
    fragments = "\n".join(draw.fragments)
    for name, value in (("yes", True), ("no", False)):
        if f"${name})" in body + fragments:
            variables[name] = value
            declared.append(f"${name}: Boolean!")
    document = f"query Drawn({', '.join(declared)}) {{ {body} }}"
    return f"{document}\n{fragments}", variables


def _graphql_view(app: Starlette) -> Any:
    for route in app.routes:
        if isinstance(route, WebSocketRoute) and route.path == "/graphql":
            return route.endpoint
    raise AssertionError("no GraphQL view")


@pytest.mark.parametrize("seed", [46, 4603])
async def test_random_documents_answer_as_the_reference_does(
    gql: GraphQLClient, app: Starlette, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    world = await build_world(gql, reviewers=3, required_approvals=2)
    other = await build_world(gql, reviewers=1, reviewer_names="elsewhere")
    operator = await gql.token(Role.OPERATOR, name="operator")
    integration = await gql.token(Role.INTEGRATION, name="integration")
    made = [
        (await world.propose({"amount": rng.randint(1, 999), "currency": "EUR"}))["proposal"]
        for _ in range(6)
    ]
    for proposal in made:
        for reviewer in rng.sample(world.reviewers, k=rng.randint(0, 3)):
            decision = rng.choice(["APPROVED", "APPROVED", "REJECTED"])
            await world.gql.raw(
                "mutation($input: DecideProposalInput!) { decideProposal(input: $input) "
                "{ replayed } }",
                {
                    "input": {
                        "proposalId": proposal["id"],
                        "decision": decision,
                        "payloadDigest": proposal["payloadDigest"],
                        "reason": "drawn",
                    }
                },
                reviewer,
            )
    elsewhere = (await other.propose())["proposal"]
    tasks = await gql("{ tasks(first: 20) { nodes { id } } }", {}, world.admin)
    ids = {
        "proposals": [p["id"] for p in made],
        "tasks": [t["id"] for t in tasks["tasks"]["nodes"]],
        "other": [elsewhere["id"]],
    }
    tokens = [
        world.admin,
        operator,
        world.reviewers[0],
        other.reviewers[0],
        world.agent,
        integration,
        None,
    ]
    view = _graphql_view(app)
    served = view.schema
    reference = build_schema(introspection=True, short_paths=False)
    schema = core_schema(served)
    answered = refused = 0
    for _ in range(DOCUMENTS):
        document, variables = draw_document(rng, schema, ids)
        for token in tokens:
            monkeypatch.setattr(view, "schema", served)
            short = await gql.comparable(document, variables, token)
            monkeypatch.setattr(view, "schema", reference)
            expected = await gql.comparable(document, variables, token)
            assert short == expected, (document, variables, token)
            answered += short[1].get("data") is not None
            refused += any(e["extensions"]["code"] for e in short[1].get("errors", []))
    # The documents were answered, and refusals (with their codes) were among the answers.
    assert answered > DOCUMENTS and refused > 0
