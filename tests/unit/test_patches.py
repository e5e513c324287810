"""JSON Merge Patch (RFC 7386) by hand, and RFC 6902 diffs, on the RFC's own examples and
on random documents."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff.patches import apply, diff, merge_patch

# RFC 7386, appendix A: (original, patch, result).
RFC_7386_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("original", "patch", "result"), RFC_7386_EXAMPLES)
def test_merge_patch_follows_the_rfc_examples(original: Any, patch: Any, result: Any) -> None:
    before = repr(original)
    assert merge_patch(original, patch) == result
    assert repr(original) == before  # the original is never changed


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)
OBJECTS = st.dictionaries(st.text(max_size=4), JSON, max_size=5)


# No deadline: a time bound would fail this correctness property on a busy CI machine.
@settings(max_examples=100, deadline=None)
@given(old=OBJECTS, new=OBJECTS)
def test_a_diff_turns_the_old_payload_into_the_new(old: Any, new: Any) -> None:
    operations = diff(old, new)
    assert as_json(apply(old, operations)) == as_json(new)
    assert (operations == []) == (as_json(old) == as_json(new))


def as_json(value: Any) -> str:
    """Equality as JSON has it: ``true`` is not ``1``."""
    return json.dumps(value, sort_keys=True)


@pytest.mark.parametrize(
    ("old", "new", "operations"),
    [
        ({"a": True}, {"a": 1}, [{"op": "replace", "path": "/a", "value": 1}]),
        ({"a": [1, 2, 3]}, {"a": [1, 2]}, [{"op": "remove", "path": "/a/2"}]),
        ({"a": [1]}, {"a": [1, 2]}, [{"op": "add", "path": "/a/1", "value": 2}]),
        ({"a": [1, 2, 3]}, {"a": [1, 3]}, [{"op": "replace", "path": "/a", "value": [1, 3]}]),
        (
            {"a/b": 1, "c~d": 1},
            {"a/b": 2},
            [
                {"op": "remove", "path": "/c~0d"},
                {"op": "replace", "path": "/a~1b", "value": 2},
            ],
        ),
        # A shape jsonpatch.make_patch turned into a patch that does not apply.
        (
            {"": [[0], 0, []]},
            {"": [[], False]},
            [
                {"op": "replace", "path": "/", "value": [[], False]},
            ],
        ),
    ],
)
def test_a_diff_names_each_change(old: Any, new: Any, operations: Any) -> None:
    assert diff(old, new) == operations
    assert as_json(apply(old, operations)) == as_json(new)
