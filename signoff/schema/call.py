"""How a root field calls a resolver: authenticate, then run it on the request's session."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, TypeVar

import strawberry
from graphql import OperationType

from signoff.schema.context import context_of

R = TypeVar("R")

# What ``call`` gives every resolver itself; never an input's field.
SUPPLIED = frozenset({"session", "work", "viewer"})

# Each mutation's field-to-argument names, worked out on its first call.
_NAMES: dict[tuple[Any, ...], tuple[tuple[str, str], ...]] = {}


async def call(info: strawberry.Info, resolver: Callable[..., Awaitable[R]], **kwargs: Any) -> R:
    """Mutations run on the write session; queries on a read session, which on SQLite
    never waits for (or holds) the write lock."""
    ctx = context_of(info)
    viewer = await ctx.viewer()
    if info.operation.operation is not OperationType.MUTATION:
        async with ctx.read() as session:
            return await resolver(session=session, viewer=viewer, **kwargs)
    async with ctx.work() as work:
        result = await resolver(work=work, viewer=viewer, **kwargs)
    await ctx.end_reads()
    return result


async def call_with(
    info: strawberry.Info,
    resolver: Callable[..., Awaitable[R]],
    input: object,
    *,
    renamed: Mapping[str, str] | None = None,
    omit: Collection[str] = (),
    **given: Any,
) -> R:
    """``call`` with each field of ``input`` as the resolver's argument of the same name,
    or of the name ``renamed`` gives it. ``given`` are the arguments the mutation builds
    itself, from the fields it names in ``omit``. A field the resolver does not take, or a
    required argument nothing gives, is a TypeError (tests/schema/test_mutation_inputs.py
    checks every mutation without running it)."""
    key = (
        resolver,
        type(input),
        tuple(sorted((renamed or {}).items())),
        frozenset(omit),
        frozenset(given),
    )
    names = _NAMES.get(key)
    if names is None:
        names = _NAMES[key] = argument_names(*key)
    arguments = {argument: getattr(input, field) for field, argument in names}
    return await call(info, resolver, **arguments, **given)


def argument_names(
    resolver: Callable[..., Any],
    input_type: type,
    renamed: tuple[tuple[str, str], ...],
    omit: frozenset[str],
    given: frozenset[str],
) -> tuple[tuple[str, str], ...]:
    """Each passed field of ``input_type`` with the resolver argument it becomes; refused
    (TypeError) unless every field is passed or omitted and every required argument given."""
    renames = dict(renamed)
    parameters = inspect.signature(resolver).parameters
    fields = [field.name for field in dataclasses.fields(input_type)]
    names = tuple((field, renames.get(field, field)) for field in fields if field not in omit)
    taken = {argument for _, argument in names} | given
    wrong = [
        f"{field} (as {argument})"
        for field, argument in names
        if argument not in parameters or argument in SUPPLIED or argument in given
    ]
    wrong += [f"rename of {field}" for field in renames if field not in fields]
    wrong += [f"omitted {field}" for field in omit if field not in fields]
    wrong += [
        f"no {name}"
        for name, parameter in parameters.items()
        if name not in SUPPLIED
        and name not in taken
        and parameter.default is inspect.Parameter.empty
    ]
    if wrong:
        raise TypeError(
            f"{input_type.__name__} does not fit {resolver.__qualname__}: {', '.join(wrong)}"
        )
    return names
