"""Idempotency keys derived from what is proposed, so that an agent that crashes and runs
the same call again gets the proposal it made the first time instead of a second one."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def derive_key(*, target: str, action: str, subject: Any, payload: Any) -> str:
    """The operation key of a proposal: a digest of everything it proposes.

    The same call gives the same key (and Signoff answers it with the first proposal,
    ``replayed``); pass an explicit key to propose the same content twice on purpose."""
    material = canonical_json(
        {"target": target, "action": action, "subject": subject, "payload": payload}
    )
    return "sc1-" + hashlib.sha256(material.encode()).hexdigest()[:48]
