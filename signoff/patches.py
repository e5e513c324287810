"""JSON patches of payloads: RFC 7386 merge patches in, RFC 6902 diffs out."""

from __future__ import annotations

from typing import Any, cast

import jsonpatch


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON Merge Patch: objects merge key by key, ``null`` removes a
    key, anything else (arrays included) replaces. ``target`` is never changed."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def diff(old: Any, new: Any) -> list[dict[str, Any]]:
    """The RFC 6902 operations that turn ``old`` into ``new``."""
    return cast(list[dict[str, Any]], jsonpatch.make_patch(old, new).patch)


def apply(document: Any, operations: list[dict[str, Any]]) -> Any:
    """Apply RFC 6902 operations to a copy of ``document``."""
    return jsonpatch.apply_patch(document, operations, in_place=False)
