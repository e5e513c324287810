"""The writes reviewers and agents make most often, in as few statements as their rules
allow: a decision reads its actors once, and a new proposal looks for no Slack message to
bring up to date."""

from __future__ import annotations

from dataclasses import replace

import pytest
from starlette.applications import Starlette

from signoff.config import Settings
from tests.helpers import GraphQLClient, build_world
from tests.schema.test_pagination import counting_statements


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """Every request reads its viewer, so the counts do not depend on the token cache."""
    return replace(settings, auth_cache_seconds=0)


def _reads(statements: list[str], table: str) -> list[str]:
    """The statements that read ``table`` (a join into it included)."""
    return [
        s
        for s in statements
        if s.lstrip().upper().startswith("SELECT") and f" {table} " in f"{s} ".replace("\n", " ")
    ]


def _not_authentication(statements: list[str]) -> list[str]:
    return [s for s in statements if "api_tokens" not in s]


async def test_a_decision_reads_its_actors_once(gql: GraphQLClient, app: Starlette) -> None:
    world = await build_world(gql, required_approvals=2)
    proposal = (await world.propose())["proposal"]

    with counting_statements(app) as statements:
        decided = await world.decide(world.reviewers[0], proposal)

    assert decided["proposal"]["approvalCount"] == 1
    own = _not_authentication(statements)
    # The decider as committed now, its membership and the proposer's person: one read,
    # which also answers the approval's approver.
    assert len(_reads(own, "actors")) == 1, "\n".join(own)
    assert len(_reads(own, "queue_memberships")) == 1, own
    assert decided["approval"]["approver"]["name"]
    # Its viewer, the proposal, the actors, its task, the approval, the two moves, the
    # Slack messages' look, the audit record (the change event goes in at commit too) and
    # on SQLite the record's log position.
    assert len(statements) <= 10, "\n".join(statements)


async def test_a_new_proposal_looks_for_no_slack_message(
    gql: GraphQLClient, app: Starlette
) -> None:
    world = await build_world(gql)

    with counting_statements(app) as statements:
        await world.propose()

    assert _reads(statements, "notifications") == [], statements
