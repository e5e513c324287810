"""A bulk preview's sum of the summary field reads as the payloads' numbers add up."""

from __future__ import annotations

from typing import Any

from signoff.models import Proposal, Target
from signoff.resolvers.approval.bulk_decisions import summary_total_of


def total(*amounts: Any, field: str | None = "amount") -> int | float | None:
    target = Target(name="t", url="http://127.0.0.1/", summary_field=field)
    proposals = [Proposal(payload={"amount": a}) for a in amounts]
    return summary_total_of(target, proposals)


def test_whole_amounts_give_a_whole_number() -> None:
    assert repr(total(1100, 1100)) == "2200"
    assert repr(total(1.5, 0.5)) == "2"


def test_fractions_add_up_as_decimals() -> None:
    assert total(0.1, 0.2) == 0.3
    assert total(19.99, 0.01, 5) == 25


def test_what_is_not_a_number_counts_for_nothing() -> None:
    assert total(10, "20", True, None, {"x": 1}) == 10
    assert total() == 0
    assert total(10, field=None) is None
