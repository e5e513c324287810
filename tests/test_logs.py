"""Structured logs: one JSON line per request (request id, actor, operation, duration, error
code), never a token or an exception's message; plain text when stderr is a terminal."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.jobs.worker import logged
from signoff.logs import JsonFormatter, TextFormatter, configure
from signoff.models import Role
from tests.helpers import CREATE_QUEUE, GraphQLClient, build_world
from tests.live import Server, http_gql
from tests.log_lines import log_lines, problems
from tests.processes import run_cli, signoff_env
from tests.readme_shell import page
from tests.schema.test_approval_links import form, linked


def _printed_request_line() -> dict[str, object]:
    """The request log line the Operating page prints (docs/operating.md)."""
    blocks = re.findall(r"^```json\n(.*?)^```$", page("docs/operating.md"), re.M | re.S)
    [line] = [json.loads(block) for block in blocks if '"signoff.requests"' in block]
    assert isinstance(line, dict)
    return line


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _record(exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = None if exc is None else (type(exc), exc, None)
    record = logging.LogRecord(
        "signoff.test", logging.ERROR, __file__, 1, "it broke", None, exc_info
    )
    record.request_id = "r-1"
    return record


def test_a_json_line_names_the_exception_type_but_never_its_message() -> None:
    line = json.loads(JsonFormatter().format(_record(ValueError("password=hunter2"))))
    assert line["message"] == "it broke" and line["level"] == "ERROR"
    assert line["request_id"] == "r-1" and line["exception"] == "ValueError"
    assert "hunter2" not in json.dumps(line)


def test_a_text_line_has_no_traceback() -> None:
    text = TextFormatter().format(_record(ValueError("password=hunter2")))
    assert "it broke request_id=r-1 exception=ValueError" in text
    assert "hunter2" not in text and "\n" not in text


def test_logs_are_plain_text_in_a_terminal_and_json_elsewhere() -> None:
    root, arq = logging.getLogger(), logging.getLogger("arq.worker")
    saved = root.handlers[:], root.level, arq.level
    try:
        terminal, pipe = Terminal(), io.StringIO()
        configure("info", stream=terminal)
        logging.getLogger("signoff.test").info("hello")
        configure("info", stream=pipe)
        logging.getLogger("signoff.test").info("hello")
    finally:
        root.handlers[:], root.level, arq.level = saved
    assert terminal.getvalue().rstrip().endswith("INFO signoff.test hello")
    assert json.loads(pipe.getvalue())["message"] == "hello"


async def test_each_request_is_one_json_line_without_the_token(
    serve: Callable[..., Awaitable[Server]], gql: GraphQLClient
) -> None:
    server = await serve(SIGNOFF_LOG_LEVEL="info")
    admin = await gql.token(Role.ADMIN)
    headers = {"Authorization": f"Bearer {admin}"}
    viewer = (await gql("{ viewer { actor { id } } }", token=admin))["viewer"]["actor"]["id"]
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
        created = await http.post(
            "/graphql",
            json={"query": CREATE_QUEUE, "variables": {"input": {"slug": "a", "name": "A"}}},
            headers=headers,
        )
        refused = await http.post(
            "/graphql",
            json={"query": 'query Lookup { queue(id: "nope") { id } }'},
            headers=headers,
        )
    server.stop()
    lines = log_lines(server.log)
    requests = {line["request_id"]: line for line in lines if line["logger"] == "signoff.requests"}
    first = requests[created.headers["x-request-id"]]
    assert list(first) == list(_printed_request_line()), "docs/operating.md prints other fields"
    assert first["operation"] == "createQueue" and first["error_code"] is None
    assert first["actor_id"] == viewer and first["status"] == 200
    assert isinstance(first["duration_ms"], float)
    second = requests[refused.headers["x-request-id"]]
    assert second["operation"] == "Lookup" and second["error_code"] == "NOT_FOUND"
    assert admin not in server.log.read_text()
    assert not problems(lines)


def test_uvicorns_color_message_is_not_carried() -> None:
    record = _record()
    record.color_message = "\x1b[32mit broke\x1b[0m"
    line = json.loads(JsonFormatter().format(record))
    assert "color_message" not in line and line["request_id"] == "r-1"
    text = TextFormatter().format(record)
    assert "color_message" not in text and "\x1b" not in text


def test_token_create_prints_no_migration_lines_but_migrate_does(tmp_path: Path) -> None:
    env = signoff_env(f"sqlite+aiosqlite:///{tmp_path / 'signoff.db'}", SIGNOFF_LOG_LEVEL="info")
    created = run_cli("token", "create", "--name", "ada", "--role", "admin", env=env)
    assert created.returncode == 0, created.stderr
    assert "alembic" not in created.stderr, created.stderr
    assert created.stderr.startswith("Token for ada (admin)")
    env["SIGNOFF_DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    migrated = run_cli("migrate", env=env)
    assert "Running upgrade" in migrated.stderr, migrated.stderr


@pytest.mark.parametrize(("found", "level"), [(0, logging.DEBUG), (3, logging.INFO)])
async def test_a_job_that_found_nothing_to_do_logs_at_debug(
    caplog: pytest.LogCaptureFixture, found: int, level: int
) -> None:
    async def sweep(_ctx: dict[str, Any]) -> int:
        return found

    caplog.set_level(logging.DEBUG, logger="signoff.jobs")
    assert await logged(sweep)({"job_id": "j-1", "job_try": 1}) == found
    [record] = [r for r in caplog.records if r.getMessage() == "job sweep"]
    assert record.levelno == level


async def test_an_approval_links_token_never_reaches_the_request_log(
    serve: Callable[..., Awaitable[Server]], gql: GraphQLClient
) -> None:
    """An operator reading the logs must not be able to decide through a link."""
    server = await serve(SIGNOFF_LOG_LEVEL="info")
    async with http_gql(server, gql.sessionmaker) as through:
        world = await build_world(through)
        _, created = await linked(through, world)
        token = created["path"].removeprefix("/links/")
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as http:
            shown = await http.get(created["path"])
            digest = created["link"]["payloadDigest"]
            decided = await http.post(created["path"], data=form(digest))
    assert (shown.status_code, decided.status_code) == (200, 200)
    server.stop()
    lines = log_lines(server.log)
    paths = [line["message"] for line in lines if line["logger"] == "signoff.requests"]
    assert {"GET /links/…", "POST /links/…"} <= set(paths), paths
    assert token not in server.log.read_text()
