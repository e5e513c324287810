"""Response classes, backoff and Retry-After: the pure parts of ``signoff.delivery``."""

from __future__ import annotations

from datetime import timedelta
from email.utils import format_datetime

import pytest

from signoff import clock
from signoff.delivery import backoff_seconds, classify, parse_retry_after
from signoff.models import ResponseClass

SCHEMA = {"type": "object", "required": ["id"]}


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, b"", (ResponseClass.APPLIED, None)),
        (204, b"", (ResponseClass.APPLIED, None)),
        (202, b"", (ResponseClass.ACCEPTED, None)),
        (408, b"", (ResponseClass.RETRYABLE, "RECEIVER_TIMEOUT")),
        (425, b"", (ResponseClass.RETRYABLE, "TOO_EARLY")),
        (429, b"", (ResponseClass.RETRYABLE, "RATE_LIMITED")),
        (500, b"", (ResponseClass.RETRYABLE, "RECEIVER_ERROR")),
        (503, b"", (ResponseClass.RETRYABLE, "RECEIVER_ERROR")),
        (409, b"", (ResponseClass.TERMINAL, "PRECONDITION_FAILED")),
        (412, b"", (ResponseClass.TERMINAL, "PRECONDITION_FAILED")),
        (400, b"", (ResponseClass.TERMINAL, "REQUEST_REJECTED")),
        (404, b"", (ResponseClass.TERMINAL, "REQUEST_REJECTED")),
        (301, b"", (ResponseClass.TERMINAL, "UNEXPECTED_STATUS")),
    ],
)
def test_response_classes(
    status: int, body: bytes, expected: tuple[ResponseClass, str | None]
) -> None:
    assert classify(status, body, None) == expected


@pytest.mark.parametrize(
    ("body", "applied"),
    [
        (b'{"id": "r-1"}', True),
        (b'{"other": 1}', False),
        (b"not json", False),
        (b'{"id": "' + b"x" * 70_000 + b'"}', False),
        # Answers Signoff could not keep: not UTF-8, NaN, U+0000, nested past the limit,
        # and nested deeper than the parser recurses (a crash of the attempt before).
        ('{"id": "r-1"}'.encode("utf-16"), False),
        (b'{"id": "r-1", "n": NaN}', False),
        (b'{"id": "r-\\u0000"}', False),
        (b'{"id": "r-1", "n": ' + b"[" * 65 + b"]" * 65 + b"}", False),
        (b'{"id": "r-1", "n": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", False),
    ],
)
def test_2xx_bodies_must_meet_the_output_schema(body: bytes, applied: bool) -> None:
    expected = (
        (ResponseClass.APPLIED, None)
        if applied
        else (ResponseClass.TERMINAL, "RESPONSE_SCHEMA_INVALID")
    )
    assert classify(200, body, SCHEMA) == expected


def test_backoff_doubles_from_15_seconds_up_to_6_hours_with_jitter() -> None:
    top = [backoff_seconds(n, lambda: 1.0) for n in range(1, 13)]
    assert top[:5] == [15, 30, 60, 120, 240]
    assert top[-1] == 6 * 3600
    assert backoff_seconds(3, lambda: 0.0) == 30  # jitter spreads over the upper half
    assert 30 <= backoff_seconds(3) <= 60


def test_retry_after_seconds_or_http_date(frozen_clock: clock.FrozenClock) -> None:
    assert parse_retry_after("120") == 120
    assert parse_retry_after(
        format_datetime(clock.now() + timedelta(seconds=90), usegmt=True)
    ) == pytest.approx(90, abs=1)
    assert parse_retry_after("999999") == 6 * 3600
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
