"""Every mutation that maps its input onto a resolver with ``call_with`` fits it: each
field is an argument of the resolver (or renamed or omitted on purpose), and every
required argument is given, checked without running the mutation."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from signoff.schema import mutation
from signoff.schema.call import argument_names

SOURCE = inspect.getsource(mutation)


def adapted_calls() -> Iterator[tuple[str, ast.expr, ast.Call]]:
    """Each mutation method's name and input annotation, with its ``call_with(...)``."""
    root = next(
        node
        for node in ast.parse(SOURCE).body
        if isinstance(node, ast.ClassDef) and node.name == "Mutation"
    )
    for method in root.body:
        if isinstance(method, ast.AsyncFunctionDef):
            for node in ast.walk(method):
                if isinstance(node, ast.Call) and ast.unparse(node.func) == "call_with":
                    annotation = next(a.annotation for a in method.args.args if a.arg == "input")
                    assert annotation is not None
                    yield method.name, annotation, node


def evaluated(node: ast.expr) -> Any:
    return eval(ast.unparse(node), vars(mutation))


CALLS = list(adapted_calls())


def test_most_mutations_map_their_input_with_call_with() -> None:
    assert len(CALLS) >= 35


@pytest.mark.parametrize(("name", "annotation", "node"), CALLS, ids=[c[0] for c in CALLS])
def test_the_input_fits_the_resolver(name: str, annotation: ast.expr, node: ast.Call) -> None:
    input_type = evaluated(annotation)
    keywords = {keyword.arg: keyword.value for keyword in node.keywords}
    renamed = evaluated(keywords.pop("renamed")) if "renamed" in keywords else {}
    omit = evaluated(keywords.pop("omit")) if "omit" in keywords else ()
    argument_names(
        evaluated(node.args[1]),
        input_type,
        tuple(sorted(renamed.items())),
        frozenset(omit),
        frozenset(given for given in keywords if given is not None),
    )


async def _resolver(*, work: object, viewer: object, name: str, size: int = 0) -> None:
    """A resolver for the refusals below."""


def test_a_field_the_resolver_does_not_take_is_refused() -> None:
    @dataclasses.dataclass
    class Extra:
        name: str
        colour: str

    with pytest.raises(TypeError, match="colour"):
        argument_names(_resolver, Extra, (), frozenset(), frozenset())


def test_a_required_argument_nothing_gives_is_refused() -> None:
    @dataclasses.dataclass
    class Short:
        size: int

    with pytest.raises(TypeError, match="no name"):
        argument_names(_resolver, Short, (), frozenset(), frozenset())
    assert argument_names(_resolver, Short, (), frozenset(), frozenset({"name"})) == (
        ("size", "size"),
    )
