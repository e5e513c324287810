from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlmodel import col

from signoff.errors import ValidationFailed
from signoff.models import HumanTask
from signoff.resolvers.core.pagination import Order, decode_cursor, encode_cursor

ORDER = (
    Order(col(HumanTask.priority), descending=True),
    Order(col(HumanTask.due_at)),
    Order(col(HumanTask.id)),
)


def test_cursors_round_trip_with_their_types() -> None:
    values = [5, datetime(2026, 11, 30, 12, 0, tzinfo=UTC), "id-1"]
    assert decode_cursor(encode_cursor(values), ORDER) == values


@pytest.mark.parametrize("cursor", ["", "!!!", encode_cursor([1, 2]), encode_cursor("x")])  # type: ignore[arg-type]
def test_foreign_cursors_are_refused(cursor: str) -> None:
    with pytest.raises(ValidationFailed):
        decode_cursor(cursor, ORDER)
