"""The agents page's and the recipes' examples name the worked example's target,
``refunds``: a delivering server with a target of that name."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

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
