"""JSON on the hot paths: values read from the database, and GraphQL responses.

orjson, for speed; where it would answer differently (integers beyond 64 bits, ``1e400``,
keys that are not strings) the standard library answers, so what clients and rules see
never depends on the codec. Checks on client input stay in ``signoff.jsonvalues``, and
digests use canonical JSON (``signoff.digest``), never this.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# Twenty digits in a row may be an integer beyond 64 bits (2**64 has 20): the standard
# library reads it exactly. A long number inside a string only costs the slower path.
# Found by mapping every digit to "0" and everything else to a space, then looking for
# twenty zeros: ten times as fast as a regular expression, which cost more than the
# decoding it guarded.
_DIGITS_TO_ZEROS = bytes(48 if 48 <= byte <= 57 else 32 for byte in range(256))
_TWENTY_DIGITS = b"0" * 20


def loads(data: str | bytes | bytearray | memoryview) -> Any:
    """The value of the JSON text ``data``, exactly as ``json.loads`` reads it."""
    raw = data.encode() if isinstance(data, str) else bytes(data)
    if _TWENTY_DIGITS not in raw.translate(_DIGITS_TO_ZEROS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass  # json.loads reads it, or raises its own error
    return json.loads(raw)


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON (what ``json.dumps`` writes, without escaping
    non-ASCII characters)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
