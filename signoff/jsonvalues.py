"""Checks on client-supplied JSON: size limits and JSON Schema validation with pointers."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from signoff.constants import JSON_VALUE_MAX_BYTES
from signoff.digest import canonical_json
from signoff.errors import SchemaInvalid, SignoffError, ValidationFailed


def require_object(value: Any, field: str) -> dict[str, Any]:
    """Refuse anything but a JSON object, and anything over the size limit."""
    if not isinstance(value, dict):
        raise ValidationFailed(f"{field} must be a JSON object.", field=field)
    require_size(value, field)
    return value


def require_size(value: Any, field: str) -> None:
    size = len(canonical_json(value).encode("utf-8"))
    if size > JSON_VALUE_MAX_BYTES:
        raise ValidationFailed(
            f"{field} is {size} bytes; the limit is {JSON_VALUE_MAX_BYTES}.", field=field
        )


def check_schema(schema: Any, field: str) -> dict[str, Any]:
    """Refuse a JSON Schema that its own metaschema rejects (``SCHEMA_INVALID``)."""
    if not isinstance(schema, dict):
        raise SchemaInvalid(f"{field} must be a JSON Schema object.", field=field)
    require_size(schema, field)
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        pointer = "/" + "/".join(str(part) for part in exc.path)
        raise SchemaInvalid(
            f"{field} is not a valid JSON Schema: {exc.message}",
            field=field,
            pointer=pointer if exc.path else "",
        ) from None
    return schema


def schema_errors(instance: Any, schema: dict[str, Any]) -> list[dict[str, str]]:
    """Every way ``instance`` breaks ``schema``, as ``{pointer, message}`` in document order."""
    cls = validator_for(schema, default=Draft202012Validator)
    validator = cls(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.path)))
    return [
        {"pointer": json_pointer(error.absolute_path), "message": error.message}
        for error in errors[:20]
    ]


def validate_against(
    instance: Any, schema: dict[str, Any], error: type[SignoffError], what: str
) -> None:
    """Raise ``error`` with the JSON pointer of each problem when ``instance`` breaks ``schema``."""
    problems = schema_errors(instance, schema)
    if problems:
        first = problems[0]
        where = first["pointer"] or "the document root"
        raise error(f"{what} breaks its schema at {where}: {first['message']}", errors=problems)


def json_pointer(path: Any) -> str:
    """RFC 6901 pointer for a jsonschema error path."""
    parts = [str(part).replace("~", "~0").replace("/", "~1") for part in path]
    return "".join("/" + part for part in parts)
