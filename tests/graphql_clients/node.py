"""Running this folder's Node scripts (clients nobody here wrote: ``graphql-http``'s audit,
``graphql-sse``'s client), installed from ``package-lock.json`` by ``make test``."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
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


class NodeProcess:
    """A running script of this folder, its JSON lines collected as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            if raw.strip():
                self.lines.append(json.loads(raw))
                self._changed.set()
        self._changed.set()

    @property
    def ended(self) -> bool:
        return self._reader.done()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line["type"] == kind]

    async def until(self, done: Callable[[NodeProcess], bool], within: float = 15) -> None:
        try:
            async with asyncio.timeout(within):
                while not done(self):
                    if self.ended:
                        raise AssertionError(f"the script ended: {self.lines}")
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            raise AssertionError(f"not within {within} s: {self.lines}") from None

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.terminate()
        await self.process.wait()
        await self._reader


@contextlib.asynccontextmanager
async def node_script(script: str, *args: str) -> AsyncIterator[NodeProcess]:
    """Run ``script`` of this folder for the block; its lines as they come."""
    node = require_node_package(FOLDER, "graphql-sse")
    process = await asyncio.create_subprocess_exec(
        node, script, *args, cwd=FOLDER, stdout=asyncio.subprocess.PIPE
    )
    running = NodeProcess(process)
    try:
        yield running
    finally:
        await running.stop()
