"""One delivery attempt over HTTP: the signed request, the response class, the backoff.

No database here: ``signoff.jobs.delivery`` claims the proposal, calls ``send`` and
hands the ``AttemptOutcome`` to ``signoff.resolvers.delivery.outcomes``. Response bodies are read up
to ``RESPONSE_BODY_MAX_BYTES`` for a digest; a target with an output schema declares its
answer a result, so an applied answer that meets the schema is also kept, parsed.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from typing import Any

import aiohttp

from signoff import __version__, clock
from signoff.constants import (
    DELIVERY_BACKOFF_BASE_SECONDS,
    DELIVERY_BACKOFF_MAX_SECONDS,
    DELIVERY_SCHEMA_VERSION,
    RESPONSE_BODY_MAX_BYTES,
    WEBHOOK_ID,
)
from signoff.destinations import (
    USERINFO,
    DestinationRefusedError,
    carries_userinfo,
    refused_connection,
)
from signoff.digest import canonical_json
from signoff.errors import SignoffError
from signoff.jsonvalues import decode_value, schema_errors
from signoff.models import Proposal, ResponseClass, Target
from signoff.webhooks import sign

Jitter = Callable[[], float]

RETRYABLE_STATUS = {408: "RECEIVER_TIMEOUT", 425: "TOO_EARLY", 429: "RATE_LIMITED"}
PRECONDITION_STATUS = frozenset({409, 412})
# A receiver stops the retries of one message with this response header (the convention
# Svix documents for Standard Webhooks senders): docs/design.md section 4.8.
DELIVERY_CONTROL_HEADER = "webhook-delivery"
ABORT_MESSAGE = "abort-message"
RECEIVER_ABORTED = "RECEIVER_ABORTED"
# The destination policy refused the target's address (docs/design.md section 10).
DESTINATION_REFUSED = "DESTINATION_REFUSED"


@dataclass(frozen=True)
class AttemptOutcome:
    """What one attempt came to; never holds the secret. Of the response body it holds the
    digest and, only where the target has an output schema and the answer applied and met
    it, the parsed document (``result``; ``None`` otherwise, or for a JSON ``null``)."""

    response_class: ResponseClass
    error_code: str | None
    status_code: int | None
    retry_after_seconds: float | None
    request_digest: str
    response_digest: str | None
    started_at: datetime
    finished_at: datetime
    duration_ms: int
    result: Any = None


def request_body(proposal: Proposal) -> bytes:
    """The delivered document: exactly the approved material, canonical JSON.

    It names the proposal (``action_id``, whose deliveries carry ``webhook-id``
    ``msg_<action_id>``) and the revision that was approved (1 unless amended), and keeps
    the agent's ``operation_key`` for the receiver.
    """
    return canonical_json(
        {
            "schema_version": DELIVERY_SCHEMA_VERSION,
            "action_id": proposal.id,
            "operation_key": proposal.operation_key,
            "payload_digest": proposal.payload_digest,
            "revision": proposal.revision,
            "action_code": proposal.action_code,
            "subject": proposal.subject,
            "payload": proposal.payload,
            "preconditions": proposal.preconditions,
        }
    ).encode("utf-8")


def webhook_id(proposal_id: str) -> str:
    """The ``webhook-id`` of a proposal's deliveries: unique across agents, the same on
    every attempt (retryProposal included), so receivers can deduplicate on it."""
    return WEBHOOK_ID.format(proposal_id=proposal_id)


def request_headers(proposal: Proposal, secret: str, body: bytes, attempt: int) -> dict[str, str]:
    """Standard Webhooks headers signed with the target's (unsealed) ``secret``."""
    headers = sign(secret, webhook_id(proposal.id), int(clock.now().timestamp()), body)
    headers.update(
        {
            "content-type": "application/json",
            "user-agent": f"signoff/{__version__}",
            "signoff-attempt": str(attempt),
        }
    )
    return headers


@dataclass(frozen=True)
class Body:
    """An attempt's request body, built once at its claim: the digest its started attempt
    records is of the bytes it sends."""

    content: bytes = field(repr=False)
    digest: str

    @classmethod
    def of(cls, proposal: Proposal) -> Body:
        content = request_body(proposal)
        return cls(content, _sha256(content))


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Response:
    """What came back: the status, at most ``RESPONSE_BODY_MAX_BYTES`` (+1) of the body,
    and the headers delivery acts on."""

    status: int
    content: bytes
    retry_after: str | None
    control: str | None


async def send(
    http: aiohttp.ClientSession,
    proposal: Proposal,
    target: Target,
    secret: str,
    attempt: int,
    prepared: Body | None = None,
) -> AttemptOutcome:
    """Make one attempt, with the body ``prepared`` at its claim (built now without one);
    transport failures become outcomes, never exceptions."""
    prepared = prepared or Body.of(proposal)
    body = prepared.content
    headers = request_headers(proposal, secret, body, attempt)
    started_at, started = clock.now(), time.monotonic()
    status: int | None = None
    content: bytes | None = None
    retry_after: str | None = None
    result: Any = None
    assert target.url is not None  # a target its agents execute is never delivered
    try:
        if carries_userinfo(target.url):  # registered before the destination policy
            raise DestinationRefusedError(USERINFO)
        async with asyncio.timeout(target.timeout_seconds):
            response = await _exchange(http, target, body, headers)
        status, content, retry_after = response.status, response.content, response.retry_after
        response_class, code, result = judge(status, content, target.output_schema)
        if response_class is ResponseClass.RETRYABLE and _aborted(response.control):
            response_class, code, result = ResponseClass.TERMINAL, RECEIVER_ABORTED, None
    except TimeoutError:
        response_class, code = ResponseClass.RETRYABLE, "TIMEOUT"
    except DestinationRefusedError:
        response_class, code = ResponseClass.TERMINAL, DESTINATION_REFUSED
    except aiohttp.ClientConnectorError as error:
        refused = refused_connection(error)
        response_class = ResponseClass.TERMINAL if refused else ResponseClass.RETRYABLE
        code = DESTINATION_REFUSED if refused else "CONNECTION_FAILED"
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError, ValueError):
        response_class, code = ResponseClass.TERMINAL, "INVALID_URL"
    except (aiohttp.ClientError, OSError):
        response_class, code = ResponseClass.RETRYABLE, "CONNECTION_FAILED"
    return AttemptOutcome(
        response_class=response_class,
        error_code=code,
        status_code=status,
        retry_after_seconds=(
            parse_retry_after(retry_after) if response_class is ResponseClass.RETRYABLE else None
        ),
        request_digest=prepared.digest,
        response_digest=None if content is None else _sha256(content),
        started_at=started_at,
        finished_at=clock.now(),
        duration_ms=int((time.monotonic() - started) * 1000),
        result=result,
    )


async def _exchange(
    http: aiohttp.ClientSession, target: Target, body: bytes, headers: dict[str, str]
) -> Response:
    """Send, then read at most ``RESPONSE_BODY_MAX_BYTES`` (+1, to tell it was cut off)."""
    # Only a target with a url has proposals that reach delivery (QUEUED).
    assert target.url is not None
    async with http.request(
        target.method, target.url, data=body, headers=headers, allow_redirects=False
    ) as response:
        content = bytearray()
        async for chunk in response.content.iter_chunked(RESPONSE_BODY_MAX_BYTES + 1):
            content.extend(chunk)
            if len(content) > RESPONSE_BODY_MAX_BYTES:
                break
        return Response(
            status=response.status,
            content=bytes(content),
            retry_after=response.headers.get("retry-after"),
            control=response.headers.get(DELIVERY_CONTROL_HEADER),
        )


def _aborted(control: str | None) -> bool:
    """The receiver asked for no more retries of this message."""
    return control is not None and control.strip().lower() == ABORT_MESSAGE


def classify(
    status: int, content: bytes, output_schema: dict[str, Any] | None
) -> tuple[ResponseClass, str | None]:
    """docs/design.md section 4.8, "Response classes"."""
    response_class, code, _ = judge(status, content, output_schema)
    return response_class, code


def judge(
    status: int, content: bytes, output_schema: dict[str, Any] | None
) -> tuple[ResponseClass, str | None, Any]:
    """``classify``, and the result to keep: the parsed answer of an applied attempt whose
    target has an output schema (``None`` for every other attempt)."""
    if status == 202:
        return ResponseClass.ACCEPTED, None, None
    if 200 <= status < 300:
        if output_schema is None:
            return ResponseClass.APPLIED, None, None
        document = _document(content, output_schema)
        if document is _BROKEN:
            return ResponseClass.TERMINAL, "RESPONSE_SCHEMA_INVALID", None
        return ResponseClass.APPLIED, None, document
    response_class, code = _failure(status)
    return response_class, code, None


def _failure(status: int) -> tuple[ResponseClass, str]:
    if status in RETRYABLE_STATUS:
        return ResponseClass.RETRYABLE, RETRYABLE_STATUS[status]
    if status >= 500:
        return ResponseClass.RETRYABLE, "RECEIVER_ERROR"
    if status in PRECONDITION_STATUS:
        return ResponseClass.TERMINAL, "PRECONDITION_FAILED"
    if 400 <= status < 500:
        return ResponseClass.TERMINAL, "REQUEST_REJECTED"
    return ResponseClass.TERMINAL, "UNEXPECTED_STATUS"


_BROKEN: Any = object()


def _document(content: bytes, schema: dict[str, Any]) -> Any:
    """The answer's JSON document if it meets ``schema``, else ``_BROKEN``: cut off, not
    UTF-8 JSON, holding what Signoff does not store (``NaN``, U+0000, nesting too deep),
    or failing the schema."""
    if len(content) > RESPONSE_BODY_MAX_BYTES:
        return _BROKEN
    try:
        document = decode_value(content, "the receiver's answer")
    except (ValueError, SignoffError):
        return _BROKEN
    return _BROKEN if schema_errors(document, schema) else document


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from ``Retry-After`` (delta-seconds or an HTTP date), capped at the max backoff."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            seconds = (parsedate_to_datetime(value) - clock.now()).total_seconds()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), float(DELIVERY_BACKOFF_MAX_SECONDS))


def backoff_seconds(attempt: int, jitter: Jitter | None = None) -> float:
    """``min(6 h, 15 s * 2^(attempt - 1))``, spread over its upper half so retries scatter."""
    base: int = min(
        DELIVERY_BACKOFF_MAX_SECONDS, DELIVERY_BACKOFF_BASE_SECONDS * 2 ** max(attempt - 1, 0)
    )
    return float(base) * (0.5 + 0.5 * (jitter or random.random)())
