"""Checks on client-supplied JSON: decoding request bodies, characters, numbers, sizes,
and JSON Schema validation with pointers."""

from __future__ import annotations

import functools
import json
import math
import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from signoff.constants import (
    JSON_LARGE_NUMBERS_KEYWORD,
    JSON_MAX_DEPTH,
    JSON_NUMBER_MAX_DIGITS,
    JSON_SAFE_INTEGER,
    JSON_VALUE_MAX_BYTES,
)
from signoff.digest import canonical_json
from signoff.errors import (
    BadRequestBody,
    InvalidCharacter,
    SchemaInvalid,
    SignoffError,
    ValidationFailed,
    ValueOutOfRange,
)

_TOO_MANY_DIGITS = 10**JSON_NUMBER_MAX_DIGITS
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")


def decode_body(data: str | bytes) -> dict[str, Any]:
    """A request body as a JSON object, or a coded refusal (never a crash).

    Refuses bytes that are not UTF-8, bad JSON, ``NaN``/``Infinity``, numbers Python cannot
    read (over 4,300 digits) or beyond a double, nesting past ``JSON_MAX_DEPTH``, and
    strings with U+0000 or a lone surrogate (no database stores them).
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise BadRequestBody(
            f"The request body is not valid UTF-8 (byte {exc.start}); send JSON encoded as UTF-8."
        ) from None
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM", text, 0)
        value = _BODY_DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise BadRequestBody(
            f"The request body is not valid JSON ({exc.msg} at line {exc.lineno} column "
            f"{exc.colno}); send a JSON object such as "
            '{"query": "{ viewer { queueIds } }"}.'
        ) from None
    except ValueError:
        # int() refusing more than 4,300 digits (JSON values allow 100: check_tree).
        raise ValueOutOfRange(
            "A number in the request has more digits than can be read; JSON values allow "
            f"{JSON_NUMBER_MAX_DIGITS}."
        ) from None
    except RecursionError:
        raise _too_deep("the request body") from None
    if not isinstance(value, dict):
        raise BadRequestBody(
            f"The request body is a JSON {_json_type(value)}; it must be a JSON object such as "
            '{"query": "{ viewer { queueIds } }"}.'
        )
    # Decoded UTF-8 holds no lone surrogate and strict JSON no raw U+0000: only an escape
    # (as \u0000 or \udc00) can bring one in. Nesting is only walked when there may be much.
    strings = not isinstance(data, bytes) or _SUSPECT_ESCAPE.search(text) is not None
    if strings or text.count("[") + text.count("{") > JSON_MAX_DEPTH:
        check_tree(value, "the request body", strings=strings)
    return value


def decode_value(data: bytes, what: str) -> Any:
    """Any JSON value in the UTF-8 ``data``, held to what Signoff stores: ``ValueError``
    (``UnicodeDecodeError``, bad JSON, too many digits) or a coded ``SignoffError`` for
    what ``decode_body`` refuses."""
    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        raise json.JSONDecodeError("Unexpected UTF-8 BOM", text, 0)
    try:
        value = _BODY_DECODER.decode(text)
    except RecursionError:
        raise _too_deep(what) from None
    check_tree(value, what)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueOutOfRange(f"{name} is not a JSON number; send a finite number or null.")


def _parse_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueOutOfRange(f"The number {text[:40]} is beyond what a JSON number can hold.")
    return number


# Built once: ``json.loads`` with hooks builds a decoder per call.
_BODY_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_parse_float)


def _json_type(value: Any) -> str:
    names = {str: "string", list: "array", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _too_deep(what: str) -> BadRequestBody:
    return BadRequestBody(
        f"{what[:1].upper()}{what[1:]} nests arrays and objects more than "
        f"{JSON_MAX_DEPTH} levels deep; the limit is {JSON_MAX_DEPTH}."
    )


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "the character U+0000 (NUL), which Signoff does not store; remove it"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone UTF-16 surrogate, which is not a character; send valid Unicode"
    return None


def check_text(text: str, what: str, pointer: str | None = None) -> None:
    """Refuse U+0000 and lone surrogates: PostgreSQL stores neither, and UTF-8 cannot."""
    problem = _text_problem(text)
    if problem is not None:
        place = what if pointer is None else f"{what} at {pointer or '/'}"
        details = {} if pointer is None else {"pointer": pointer}
        raise InvalidCharacter(f"{place[:1].upper()}{place[1:]} contains {problem}.", **details)


# A place in a JSON value: the place of its container and its key there (None: the root).
_Path = tuple[Any, Any] | None


def check_tree(value: Any, what: str, *, large_numbers: bool = True, strings: bool = True) -> None:
    """Walk a JSON value without recursion: its depth, every string and key (unless
    ``strings`` is false: already known clean) and every number. Pointers are only
    built for the refusal."""
    _check_leaf(value, what, None, large_numbers, strings)
    stack: list[tuple[Any, _Path, int]] = [(value, None, 0)]
    while stack:
        item, path, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        if depth >= JSON_MAX_DEPTH:
            raise _too_deep(what)
        for key, child in item.items() if isinstance(item, dict) else enumerate(item):
            if strings and isinstance(key, str) and _text_problem(key) is not None:
                check_text(key, f"a key of {what}", _pointer(path))
            if isinstance(child, dict | list):
                stack.append((child, (path, key), depth + 1))
            elif child is not None and not isinstance(child, bool):
                _check_leaf(child, what, (path, key), large_numbers, strings)


def _check_leaf(value: Any, what: str, path: _Path, large_numbers: bool, strings: bool) -> None:
    if isinstance(value, str):
        if strings and _text_problem(value) is not None:
            check_text(value, what, _pointer(path))
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueOutOfRange(
            f"{_place(what, path)} is not a finite number.", pointer=_pointer(path)
        )
    elif isinstance(value, int) and abs(value) >= _TOO_MANY_DIGITS:
        raise ValueOutOfRange(
            f"{_place(what, path)} has more than {JSON_NUMBER_MAX_DIGITS} digits.",
            pointer=_pointer(path),
        )
    elif (
        not large_numbers
        and isinstance(value, int | float)
        and not isinstance(value, bool)
        and abs(value) > JSON_SAFE_INTEGER
    ):
        raise ValueOutOfRange(
            f"{_place(what, path)} is beyond ±2^53 ({JSON_SAFE_INTEGER}), which JSON readers "
            "cannot keep exactly; send it as a string, or have the target's input schema set "
            f'"{JSON_LARGE_NUMBERS_KEYWORD}": true.',
            pointer=_pointer(path),
        )


def _pointer(path: _Path) -> str:
    parts: list[str] = []
    while path is not None:
        path, key = path
        parts.append(_escape(str(key)))
    return "".join("/" + part for part in reversed(parts))


def _place(what: str, path: _Path) -> str:
    return f"{what[:1].upper()}{what[1:]} at {_pointer(path) or '/'}"


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def allows_large_numbers(schema: dict[str, Any] | None) -> bool:
    """A JSON Schema opts in to numbers beyond ±2^53 with ``"x-signoff-large-numbers": true``."""
    return schema is not None and schema.get(JSON_LARGE_NUMBERS_KEYWORD) is True


def require_object(value: Any, field: str, *, large_numbers: bool = False) -> dict[str, Any]:
    """Refuse anything but a JSON object, anything over the size limit, strings a database
    cannot store, and numbers beyond ±2^53 (unless ``large_numbers``)."""
    if not isinstance(value, dict):
        raise ValidationFailed(f"{field} must be a JSON object.", field=field)
    check_tree(value, field, large_numbers=large_numbers)
    require_size(value, field)
    return value


def require_size(value: Any, field: str) -> None:
    _require_bytes(canonical_json(value), field)


def _require_bytes(text: str, field: str) -> None:
    size = len(text.encode("utf-8"))
    if size > JSON_VALUE_MAX_BYTES:
        raise ValidationFailed(
            f"{field} is {size} bytes; the limit is {JSON_VALUE_MAX_BYTES}.", field=field
        )


def check_schema(schema: Any, field: str) -> dict[str, Any]:
    """Refuse a JSON Schema that its own metaschema rejects (``SCHEMA_INVALID``)."""
    if not isinstance(schema, dict):
        raise SchemaInvalid(f"{field} must be a JSON Schema object.", field=field)
    check_tree(schema, field)
    text = canonical_json(schema)
    _require_bytes(text, field)
    problem = _schema_problem(text)
    if problem is not None:
        message, pointer = problem
        raise SchemaInvalid(
            f"{field} is not a valid JSON Schema: {message}", field=field, pointer=pointer
        )
    return schema


# Tasks and targets reuse a handful of schemas. Checking one against its metaschema
# costs a noticeable part of a `createTask`, and
# building a validator is most of checking a small payload, so both are kept by the
# schema's canonical JSON.
SCHEMA_CACHE_SIZE = 128


@functools.lru_cache(maxsize=SCHEMA_CACHE_SIZE)
def _schema_problem(text: str) -> tuple[str, str] | None:
    """The metaschema's objection to the schema in ``text`` (canonical JSON): its message
    and JSON pointer; ``None`` if it has none."""
    schema = json.loads(text)
    try:
        validator_for(schema, default=Draft202012Validator).check_schema(schema)
    except SchemaError as exc:
        return exc.message, ("/" + "/".join(str(part) for part in exc.path) if exc.path else "")
    return None


@functools.lru_cache(maxsize=SCHEMA_CACHE_SIZE)
def _validator(text: str) -> Any:
    schema = json.loads(text)
    return validator_for(schema, default=Draft202012Validator)(schema)


def schema_errors(instance: Any, schema: dict[str, Any]) -> list[dict[str, str]]:
    """Every way ``instance`` breaks ``schema``, as ``{pointer, message}`` in document order."""
    validator = _validator(canonical_json(schema))
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
