"""Logging: one line per request and per job, JSON for machines, plain text in a terminal.

Never a traceback or an exception's message (they can carry SQL, values or secrets), only
its type. ``RequestLogging`` writes the request's line, and the layers below note on its
``RequestLog`` what they learn later: the actor, the operation, the error code
(docs/design.md section 14, Logs).
"""

from __future__ import annotations

import json
import logging
import random
import sys
import time
from collections.abc import Awaitable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

requests_logger = logging.getLogger("signoff.requests")

# Paths whose last part is a secret (an approval link's token): a log line names the route,
# never the secret, so whoever reads the logs cannot decide through the link.
SECRET_PATH_PREFIXES = ("/links/",)
REDACTED = "…"

JSON = "json"
TEXT = "text"
AUTO = "auto"

# What every LogRecord has; anything else on a record was passed as ``extra``. uvicorn
# passes ``color_message``, its message again with terminal escape codes: never printed.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}


@dataclass
class RequestLog:
    """What one request's log line says besides method, path, status and duration."""

    request_id: str
    actor_id: str | None = None
    operation: str | None = None
    error_code: str | None = None


current_request: ContextVar[RequestLog | None] = ContextVar("signoff_request", default=None)


def request_id() -> str:
    """The id of the request being served (a new one outside a request)."""
    log = current_request.get()
    return log.request_id if log is not None else new_request_id()


def new_request_id() -> str:
    """Sixteen random hex digits, to find a request's log line: not a secret, so from
    ``random`` (a UUID's construction, or ``os.urandom``'s system call, shows in a
    small request's time)."""
    return f"{random.getrandbits(64):016x}"


def note(
    *, actor_id: str | None = None, operation: str | None = None, error_code: str | None = None
) -> None:
    """Add to the current request's line; the first operation and error code stay."""
    log = current_request.get()
    if log is None:
        return
    log.actor_id = actor_id or log.actor_id
    log.operation = log.operation or operation
    log.error_code = log.error_code or error_code


def loggable_path(path: str) -> str:
    """``path`` as a log line may show it: ``/links/<token>`` becomes ``/links/…``."""
    for prefix in SECRET_PATH_PREFIXES:
        if path.startswith(prefix) and len(path) > len(prefix):
            return prefix + REDACTED
    return path


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _exception(record: logging.LogRecord) -> str | None:
    return (
        None
        if record.exc_info is None or record.exc_info[0] is None
        else record.exc_info[0].__name__
    )


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message and the record's extras."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_extras(record),
        }
        exception = _exception(record)
        if exception is not None:
            line["exception"] = exception
        return json.dumps(line, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger message key=value…`` for people reading a terminal."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        saved = record.exc_info, record.exc_text
        record.exc_info, record.exc_text = None, None
        try:
            line = super().format(record)
        finally:
            record.exc_info, record.exc_text = saved
        fields = {**_extras(record), "exception": _exception(record)}
        extra = " ".join(f"{k}={v}" for k, v in fields.items() if v is not None)
        return f"{line} {extra}" if extra else line


def configure(level: str, log_format: str = AUTO, stream: IO[str] | None = None) -> None:
    """Send every logger to ``stream`` (stderr) at ``level``, as JSON or plain text."""
    stream = stream or sys.stderr
    if log_format == AUTO:
        log_format = TEXT if stream.isatty() else JSON
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextFormatter() if log_format == TEXT else JsonFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # arq writes two lines per job; Signoff writes one (signoff.jobs.logged).
    logging.getLogger("arq.worker").setLevel(max(logging.WARNING, root.level))


class RequestLogging:
    """One INFO line per HTTP request or websocket connection, when it ends, on
    ``signoff.requests``; the request id is also answered as ``x-request-id``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        log = RequestLog(new_request_id())
        token = current_request.set(log)
        started = time.perf_counter()
        status: int | None = None

        # A plain function handing back the server's own awaitable, not a coroutine of its
        # own: a broadcast passes every live frame of every socket through here.
        def send_and_note(message: Message) -> Awaitable[None]:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
                headers.append((b"x-request-id", log.request_id.encode()))
                message = {**message, "headers": headers}
            elif message["type"] == "websocket.close":
                status = message.get("code", 1000)
            return send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            current_request.reset(token)
            requests_logger.info(
                "%s %s",
                scope.get("method", "WEBSOCKET"),
                loggable_path(scope["path"]),
                extra={
                    "request_id": log.request_id,
                    "status": status,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "actor_id": log.actor_id,
                    "operation": log.operation,
                    "error_code": log.error_code,
                },
            )
