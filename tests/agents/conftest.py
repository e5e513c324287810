"""The agents page's and the recipes' examples name the worked example's target,
``refunds``: a delivering server with a target of that name."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from signoff.database import SessionMaker
from tests.client.conftest import Serve, Stage, staged


@pytest.fixture
async def refunds(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> AsyncIterator[Stage]:
    async with staged(serve, sessionmaker, database_url, tmp_path, name="refunds") as made:
        yield made


def fenced(text: str, language: str) -> list[str]:
    """The bodies of the ``language`` fenced blocks of a page, as printed."""
    fence = re.compile(rf"^```{language}[ \t]*\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)
    return [match["body"] for match in fence.finditer(text)]


async def approve_each(
    stage: Stage, count: int, agent: asyncio.subprocess.Process, within: float = 30
) -> list[str]:
    """Approve proposals as they appear, as a reviewer would, until ``count`` were (or
    the ``agent`` process ended)."""
    approved: list[str] = []
    async with asyncio.timeout(within):
        while len(approved) < count and agent.returncode is None:
            data = await stage.gql(
                "query { proposals(state: APPROVAL_REQUIRED) { nodes { id } } }",
                {},
                stage.world.admin,
            )
            for node in data["proposals"]["nodes"]:
                if node["id"] not in approved:
                    await stage.decide(node["id"])
                    approved.append(node["id"])
            await asyncio.sleep(0.2)
    return approved


Decision = tuple[str, str] | tuple[str, dict[str, Any]] | str


async def review(
    stage: Stage,
    decisions: dict[str, list[Decision]],
    agent: asyncio.subprocess.Process,
    within: float = 60,
) -> None:
    """Decide each ticket's proposal as a reviewer would, in turn as it comes up for review:
    ``"approve"``, ``("reject", reason)`` or ``("amend", patch)`` (the agent accepts an
    amendment, then it comes up again for the next decision), until every decision was
    made (or the ``agent`` process ended)."""
    done: set[tuple[str, int]] = set()
    left = {ticket: list(steps) for ticket, steps in decisions.items()}
    query = (
        "query { proposals(state: APPROVAL_REQUIRED) { nodes { id subject revision "
        "awaitingProposer payloadDigest } } }"
    )
    async with asyncio.timeout(within):
        while any(left.values()) and agent.returncode is None:
            data = await stage.gql(query, {}, stage.world.admin)
            for node in data["proposals"]["nodes"]:
                seen = (node["id"], node["revision"])
                steps = left.get(node["subject"].get("ticket"), [])
                if node["awaitingProposer"] or seen in done or not steps:
                    continue
                done.add(seen)
                step = steps.pop(0)
                if step == "approve":
                    await stage.world.decide(stage.world.reviewers[1], node)
                elif step[0] == "reject":
                    await stage.world.decide(
                        stage.world.reviewers[1], node, "REJECTED", reason=step[1]
                    )
                else:
                    await stage.gql(
                        AMEND, {"input": amendment(node, step[1])}, stage.world.reviewers[0]
                    )
            await asyncio.sleep(0.2)


AMEND = "mutation($input: AmendProposalInput!) { amendProposal(input: $input) { replayed } }"


def amendment(node: dict[str, Any], patch: Any) -> dict[str, Any]:
    return {
        "proposalId": node["id"],
        "basedOnDigest": node["payloadDigest"],
        "reason": "Only the unused part",
        "patch": patch,
    }
