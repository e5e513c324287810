"""How a timeline reads audit records (``signoff.resolvers.approval.timeline``): each
delivery start gets the attempt recorded after it and before the next start, and details
it cannot read leave their fields empty."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from signoff.models import AuditEvent, DeliveryAttempt, ResponseClass
from signoff.resolvers.approval.timeline import EntryKind, entry_of, with_attempts

T0 = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)


def _record(action: str, seconds: float, **details: object) -> AuditEvent:
    return AuditEvent(
        action=action,
        target_type="proposal",
        target_id="p-1",
        details=details,
        created_at=T0 + timedelta(seconds=seconds),
    )


def _attempt(number: int, seconds: float) -> DeliveryAttempt:
    return DeliveryAttempt(
        proposal_id="p-1",
        attempt_number=number,
        response_class=ResponseClass.RETRYABLE,
        request_digest="sha256:0",
        started_at=T0 + timedelta(seconds=seconds),
    )


def test_a_start_refused_before_sending_gets_no_attempt() -> None:
    records = [
        _record("proposal.delivery_started", 10),
        _record("proposal.delivery_started", 20),  # refused before sending: no attempt
        _record("proposal.delivery_refused", 20.001),
        _record("proposal.delivery_started", 30),
    ]
    first, second = _attempt(1, 10.001), _attempt(2, 30.002)
    entries = with_attempts([entry_of(r) for r in records], [first, second])
    assert [e.attempt for e in entries] == [first, None, None, second]


def test_unreadable_details_leave_fields_empty() -> None:
    entry = entry_of(
        _record(
            "proposal.amended",
            0,
            revision="two",
            payload_digest=7,
            policy_rule={"rule": 0},
            diff=[{"op": "replace"}, "x", {"op": "add", "path": "/a", "value": 1}],
        )
    )
    assert entry.kind is EntryKind.AMENDED
    assert (entry.revision, entry.payload_digest, entry.policy_rule) == (None, None, None)
    assert [(op.op, op.path, op.value) for op in entry.diff] == [("add", "/a", 1)]


def test_an_action_it_does_not_know_is_other() -> None:
    assert entry_of(_record("proposal.approvals_recounted", 0)).kind is EntryKind.OTHER
