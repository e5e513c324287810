from __future__ import annotations

import pytest

from signoff.errors import PayloadSchemaInvalid, SchemaInvalid, ValidationFailed
from signoff.jsonvalues import check_schema, json_pointer, require_object, validate_against


def test_json_pointers_escape_slashes_and_tildes() -> None:
    assert json_pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"
    assert json_pointer([]) == ""


def test_every_schema_error_is_reported_with_its_pointer() -> None:
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "required": ["name"],
    }
    with pytest.raises(PayloadSchemaInvalid) as caught:
        validate_against({"items": [1, "two"]}, schema, PayloadSchemaInvalid, "payload")
    pointers = [e["pointer"] for e in caught.value.details["errors"]]
    assert pointers == ["", "/items/1"]


def test_a_schema_its_metaschema_rejects_is_invalid() -> None:
    with pytest.raises(SchemaInvalid):
        check_schema({"type": 12}, "inputSchema")
    assert check_schema({"type": "object"}, "inputSchema") == {"type": "object"}


def test_values_over_64_kib_are_refused() -> None:
    with pytest.raises(ValidationFailed, match="limit"):
        require_object({"blob": "x" * 70_000}, "payload")
    with pytest.raises(ValidationFailed, match="JSON object"):
        require_object([1, 2], "payload")
