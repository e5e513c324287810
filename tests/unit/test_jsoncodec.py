"""The fast JSON codec reads and writes what the standard library does, types included,
on the cases where orjson alone would not, and on random documents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff import jsoncodec


def _typed(value: Any) -> str:
    """A text that tells 1 from 1.0 and True from 1 (``==`` does not)."""
    return json.dumps(value, sort_keys=False)


@pytest.mark.parametrize(
    "text",
    [
        "123456789012345678901234567890",  # beyond 64 bits: orjson reads a float
        "-18446744073709551617",
        '{"amount": 18446744073709551616, "note": "x"}',
        '{"order": "o-12345678901234567890123"}',  # a long number in a string
        "1e400",  # orjson refuses; the standard library reads infinity
        '{"a": 1, "a": 2}',
        "[1.0, -0.0, 1.5e-7, 9007199254740993]",
        '"\\u00e9\\u2028"',
        "null",
    ],
)
def test_loads_reads_what_the_standard_library_reads(text: str) -> None:
    for data in (text, text.encode(), memoryview(text.encode())):
        assert _typed(jsoncodec.loads(data)) == _typed(json.loads(text))


def test_loads_raises_the_standard_librarys_error_on_bad_json() -> None:
    with pytest.raises(json.JSONDecodeError):
        jsoncodec.loads('{"a": ')


@pytest.mark.parametrize(
    "value",
    [
        {"amount": 2**64, "nested": [2**70, -(2**80)]},  # orjson refuses to write these
        {1: "a non-string key"},
        {"text": "é\u2028\U0001f600", "n": [1, 1.0, -0.0, None, True]},
    ],
)
def test_dumps_writes_what_the_standard_library_writes(value: Any) -> None:
    assert _typed(json.loads(jsoncodec.dumps(value))) == _typed(
        json.loads(json.dumps(value, ensure_ascii=False))
    )


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**100), max_value=2**100)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_random_documents_read_and_write_as_with_the_standard_library(value: Any) -> None:
    text = json.dumps(value)
    assert _typed(jsoncodec.loads(text)) == _typed(json.loads(text))
    assert _typed(json.loads(jsoncodec.dumps(value))) == _typed(value)
