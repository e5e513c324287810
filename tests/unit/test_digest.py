from __future__ import annotations

from datetime import UTC, datetime

from signoff.digest import canonical_json, sha256_digest
from signoff.models import Proposal
from signoff.models.proposal import payload_digest_of


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    assert (
        canonical_json({"b": 1, "a": {"d": [1, 2], "c": "é"}}) == '{"a":{"c":"é","d":[1,2]},"b":1}'
    )


def test_the_digest_ignores_key_order() -> None:
    assert sha256_digest({"a": 1, "b": 2}) == sha256_digest({"b": 2, "a": 1})
    assert sha256_digest({"a": 1}).startswith("sha256:") and len(sha256_digest({})) == 71


def test_the_payload_digest_covers_what_is_sent_and_the_expiry() -> None:
    proposal = Proposal(
        id="p-1",
        target_id="t-1",
        proposed_by_id="a-1",
        action_code="x",
        subject={"s": 1},
        payload={"amount": 1},
        preconditions={},
        payload_digest="",
        request_digest="",
        operation_key="k",
        expires_at=datetime(2026, 12, 1, tzinfo=UTC),
    )
    digest = payload_digest_of(proposal)
    proposal.payload = {"amount": 2}
    assert payload_digest_of(proposal) != digest
    proposal.payload = {"amount": 1}
    proposal.expires_at = datetime(2026, 12, 2, tzinfo=UTC)
    assert payload_digest_of(proposal) != digest
