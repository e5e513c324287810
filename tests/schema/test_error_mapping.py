"""Unexpected errors are masked for the client and logged without message or trace."""

from __future__ import annotations

import logging

import pytest
import strawberry

from signoff.errors import NotFound
from signoff.schema import SignoffSchema
from signoff.schema.errors import ErrorMapping


@strawberry.type
class Query:
    @strawberry.field
    def broken(self) -> str:
        raise RuntimeError("password=hunter2 SELECT * FROM api_tokens")

    @strawberry.field
    def refused(self) -> str:
        raise NotFound("No such thing.")


schema = SignoffSchema(query=Query, extensions=[ErrorMapping])


async def test_an_unexpected_error_is_masked_and_logged_safely(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="signoff.errors"):
        result = await schema.execute("{ broken }")
    assert result.errors is not None
    error = result.errors[0].formatted
    assert error["message"] == "Unexpected error."
    assert error["extensions"]["code"] == "INTERNAL"
    assert "hunter2" not in str(error)
    assert len(caplog.records) == 1
    line = caplog.records[0].getMessage()
    assert "RuntimeError" in line and "test_error_mapping.py" in line
    assert "hunter2" not in line and "SELECT" not in line
    assert caplog.records[0].exc_info is None


async def test_a_refusal_keeps_its_code_and_message() -> None:
    result = await schema.execute("{ refused }")
    assert result.errors is not None
    assert result.errors[0].formatted["extensions"] == {"code": "NOT_FOUND"}
    assert result.errors[0].formatted["message"] == "No such thing."
