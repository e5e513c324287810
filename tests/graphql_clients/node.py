"""Running this folder's Node scripts (clients nobody here wrote: ``graphql-http``'s audit,
``graphql-sse``'s client), installed from ``package-lock.json`` by ``make test``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from tests.machine import require_node_package

FOLDER = Path(__file__).resolve().parent


async def run_node(script: str, *args: str, within: float = 60) -> list[dict[str, Any]]:
    """Run ``script`` of this folder; its output, one JSON object a line."""
    node = require_node_package(FOLDER, "graphql-sse")
    process = await asyncio.create_subprocess_exec(
        node,
        script,
        *args,
        cwd=FOLDER,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        async with asyncio.timeout(within):
            out, err = await process.communicate()
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode == 0, f"node {script} failed: {err.decode()[-2000:]}"
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()]
