from __future__ import annotations

import uuid

from signoff.models.base import new_id


def test_ids_are_uuid7_and_increase_within_a_process() -> None:
    ids = [new_id() for _ in range(10_000)]
    assert all(uuid.UUID(i).version == 7 for i in ids[:10])
    assert all(str(uuid.UUID(i)) == i for i in ids)  # the canonical form, lower case
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
