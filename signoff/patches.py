"""JSON patches of payloads: RFC 7386 merge patches in, RFC 6902 diffs out."""

from __future__ import annotations

from typing import Any

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
    """The RFC 6902 operations that turn ``old`` into ``new``: objects key by key, arrays
    item by item where one is the other with items added or removed at its end, and
    replaced whole otherwise. Written here because ``jsonpatch.make_patch`` produces
    patches that do not apply for some array edits, and JSON's ``true`` is not ``1``."""
    operations: list[dict[str, Any]] = []
    _diff_into(operations, "", old, new)
    return operations


def _diff_into(operations: list[dict[str, Any]], path: str, old: Any, new: Any) -> None:
    if _same(old, new):
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                operations.append({"op": "remove", "path": _child(path, key)})
        for key, value in new.items():
            if key in old:
                _diff_into(operations, _child(path, key), old[key], value)
            else:
                operations.append({"op": "add", "path": _child(path, key), "value": value})
    elif isinstance(old, list) and isinstance(new, list) and _one_extends_the_other(old, new):
        shared = min(len(old), len(new))
        for index in range(shared):
            _diff_into(operations, _child(path, str(index)), old[index], new[index])
        for index in range(len(old) - 1, shared - 1, -1):
            operations.append({"op": "remove", "path": _child(path, str(index))})
        for index in range(shared, len(new)):
            operations.append({"op": "add", "path": _child(path, str(index)), "value": new[index]})
    else:
        operations.append({"op": "replace", "path": path, "value": new})


def _one_extends_the_other(old: list[Any], new: list[Any]) -> bool:
    """Equal lengths (edited item by item), or the shorter one a prefix of the longer."""
    shorter, longer = sorted((old, new), key=len)
    return len(old) == len(new) or all(map(_same, shorter, longer[: len(shorter)]))


def _same(old: Any, new: Any) -> bool:
    """JSON equality: ``True`` is not ``1``, and ``1`` is ``1.0``."""
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_same(old[k], new[k]) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(map(_same, old, new))
    if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
        return False
    return bool(old == new)


def _child(path: str, key: str) -> str:
    return f"{path}/{key.replace('~', '~0').replace('/', '~1')}"


def apply(document: Any, operations: list[dict[str, Any]]) -> Any:
    """Apply RFC 6902 operations to a copy of ``document``."""
    return jsonpatch.apply_patch(document, operations, in_place=False)
