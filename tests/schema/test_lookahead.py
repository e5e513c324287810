"""Looking ahead at a list's selection: what it finds, what it costs, and that a page
answered from loaders warmed up front says what the nested loaders alone would say."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any, cast

import pytest
from graphql import FieldNode, FragmentDefinitionNode, OperationDefinitionNode, parse
from starlette.applications import Starlette

from signoff.config import Settings
from signoff.models import Target
from signoff.models.records import RowsWhere
from signoff.schema.delivery.target import Target as TargetType
from signoff.schema.loaders import RowLoader, now_or_later
from signoff.schema.lookahead import selected
from tests.helpers import GraphQLClient, build_world
from tests.schema.test_pagination import counting_statements


@dataclass
class _RawInfo:
    field_nodes: list[FieldNode]
    fragments: dict[str, FragmentDefinitionNode]


@dataclass
class _Info:
    _raw_info: _RawInfo


def _info_for_root_field(document: str) -> Any:
    """What a resolver of the document's first root field would get, as far as
    ``selected`` reads it."""
    parsed = parse(document)
    operation = next(d for d in parsed.definitions if isinstance(d, OperationDefinitionNode))
    fragments = {
        d.name.value: d for d in parsed.definitions if isinstance(d, FragmentDefinitionNode)
    }
    root = operation.selection_set.selections[0]
    assert isinstance(root, FieldNode)
    return _Info(_RawInfo([root], fragments))


def test_fields_merge_across_aliases_fragments_and_inline_fragments() -> None:
    info = _info_for_root_field(
        """
        query { proposals { edges { node {
          id
          a: target { name }
          b: target { id }
          ... on Proposal { approvals { decision } }
          ...More
        } } } }
        fragment More on Proposal { approvals { approver { name } } task @skip(if: true) { id } }
        """
    )
    node = selected(info, depth=4)["edges"]["node"]
    assert node.names() == {"id", "target", "approvals", "task"}
    assert node["target"].names() == {"name", "id"}
    assert node["approvals"].names() == {"decision", "approver"}
    assert "missing" not in node
    assert not node["missing"]


def test_it_stops_at_the_depth_asked() -> None:
    info = _info_for_root_field(
        "{ proposals { edges { node { approvals { approver { name } } } } } }"
    )
    node = selected(info, depth=3)["edges"]["node"]
    assert "approvals" in node
    assert not node["approvals"], "three levels: edges, node, approvals"


def test_fragments_spreading_fragments_twice_are_walked_once_each() -> None:
    """Forty fragments, each spreading the previous one twice: a walk that expanded every
    spread would visit 2^40 fields and never finish; this one visits each fragment once."""
    fragments = ["fragment F0 on Proposal { id target { name } }"]
    fragments += [
        f"fragment F{n} on Proposal {{ ...F{n - 1} ... on Proposal {{ ...F{n - 1} }} }}"
        for n in range(1, 41)
    ]
    info = _info_for_root_field(
        "query { proposals { edges { node { ...F40 } } } }\n" + "\n".join(fragments)
    )
    node = selected(info, depth=4)["edges"]["node"]
    assert node.names() == {"id", "target"}
    assert node["target"].names() == {"name"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return replace(settings, auth_cache_seconds=0)


NESTED = """approvalCount target { id name } queue { slug } proposedBy { name }
  task { id state queue { slug } } approvals { decision approver { id name } }"""
# The page warms its loaders up front; a task's proposal goes through the loaders alone.
THROUGH_PAGE = "{ proposals(first: 50) { nodes { id " + NESTED + " } } }"
THROUGH_TASKS = "{ tasks(first: 50) { edges { node { proposal { id " + NESTED + " } } } } }"


async def test_warmed_and_loaded_relations_agree(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposals = [(await world.propose())["proposal"] for _ in range(6)]
    for proposal in proposals[::2]:
        await world.decide(world.reviewers[0], proposal)

    page = (await gql(THROUGH_PAGE, {}, world.admin))["proposals"]["nodes"]
    tasks = (await gql(THROUGH_TASKS, {}, world.admin))["tasks"]["edges"]
    through_tasks = {e["node"]["proposal"]["id"]: e["node"]["proposal"] for e in tasks}
    assert len(page) == 6
    assert {p["id"]: p for p in page} == through_tasks
    assert sum(len(p["approvals"]) for p in page) == 3
    assert all(p["approvals"][0]["approver"]["name"] for p in page if p["approvals"])


async def test_only_what_is_selected_is_loaded(gql: GraphQLClient, app: Starlette) -> None:
    world = await build_world(gql)
    for _ in range(3):
        await world.propose()
    with counting_statements(app) as bare:
        await gql("{ proposals { edges { node { id } } } }", {}, world.admin)
    with counting_statements(app) as with_target:
        await gql("{ proposals { edges { node { target { name } } } } }", {}, world.admin)
    # The page's own reads: whatever else the process reads meanwhile (its viewer again,
    # once the cache's moment has passed on a loaded machine) is not the page's.
    page, page_with_target = _page_reads(bare), _page_reads(with_target)
    assert len(page_with_target) == len(page) + 1, (bare, with_target)
    assert not any("FROM targets" in s for s in bare), bare


def _page_reads(statements: list[str]) -> list[str]:
    return [s for s in statements if "FROM proposals" in s or "FROM targets" in s]


async def test_proposals_of_one_target_share_its_conversion(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page converts each loaded target once, and gives every proposal its own."""
    first, second = await build_world(gql), await build_world(gql)
    made = {(await first.propose())["proposal"]["id"]: first.target_id for _ in range(3)}
    made |= {(await second.propose())["proposal"]["id"]: second.target_id for _ in range(2)}
    converted: list[str] = []
    convert = TargetType.from_model

    def counted(row: Any) -> Any:
        converted.append(row.id)
        return convert(row)

    # The page's relation holds its conversion (_target), which makes each Target here.
    monkeypatch.setattr(TargetType, "from_model", counted)
    page = (await gql(THROUGH_PAGE, {}, first.admin))["proposals"]["nodes"]
    assert {p["id"]: p["target"]["id"] for p in page} == made
    assert sorted(converted) == sorted({first.target_id, second.target_id})


async def test_a_value_loaded_again_is_converted_again() -> None:
    loader: RowLoader[Any] = RowLoader(cast(Any, None), RowsWhere(Target, "id", ()), many=False)
    before, after = SimpleNamespace(id="t", name="before"), SimpleNamespace(id="t", name="after")
    loader.prime("t", before)
    assert now_or_later(loader, "t", _name) == "before"
    assert now_or_later(loader, "t", _name) == "before"
    loader.clear("t")
    loader.prime("t", after)
    assert now_or_later(loader, "t", _name) == "after"


def _name(row: Any) -> str:
    return str(row.name)


def test_a_fields_selection_is_found_again_by_its_nodes_identity() -> None:
    document = "query { proposals { edges { node { id target { name } approvals { id } } } } }"
    info = _info_for_root_field(document)
    first = selected(info, depth=4)
    assert selected(info, depth=4) is first
    assert selected(info, depth=3) is not first
    # Another parse of the same text is other nodes: walked afresh, the same answer.
    again = selected(_info_for_root_field(document), depth=4)
    assert again is not first
    assert again["edges"]["node"].names() == first["edges"]["node"].names()
    assert first["edges"]["node"].names() == {"id", "target", "approvals"}
