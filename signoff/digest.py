"""Canonical JSON and the digests built on it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

# One encoder, not one per call as ``json.dumps`` with options builds: a claim digests
# each delivery's payload and body.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 characters kept as they are (what
    ``json.dumps`` with those options writes)."""
    return _ENCODER.encode(value)


def sha256_digest(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
