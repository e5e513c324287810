"""Keyed mutations: the same request under the same key is done once.

``once`` stores the request's digest beside the result, in the transaction that makes the
change: the same key and digest replays the result, another request under the key is
``IDEMPOTENCY_KEY_REUSED``, and of two racing calls the loser rolls back and answers as the
winner's replay (docs/design.md section 11).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy import bindparam
from sqlalchemy.exc import IntegrityError

from signoff import jsoncodec
from signoff.digest import sha256_digest
from signoff.errors import IdempotencyKeyReused, SignoffError, ValidationFailed
from signoff.models import IdempotencyRecord
from signoff.models.base import new_id
from signoff.models.records import (
    RecordSelect,
    record_columns,
    table_of,
)
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core.work import UnitOfWork

KEY_MAX_CHARS = 200

_RECORDS = table_of(IdempotencyRecord)


def _stored_select(dialect: str) -> sa.Select[Any]:
    """The two columns a keyed call reads of its record (the result as text, decoded when
    read: ``records.record_columns``), compiled once; on PostgreSQL read through psycopg."""
    return sa.select(*_stored_columns()).where(_looked_up(""))


def _stored_columns() -> list[Any]:
    columns = {column.key: column for column in record_columns(IdempotencyRecord)}
    return [columns["request_digest"], columns["_json_text_result"]]


def _looked_up(prefix: str) -> sa.ColumnElement[bool]:
    """The record of the call's key: parameters ``actor_id``, ``operation`` and ``key``,
    their names after ``prefix``."""
    return sa.and_(
        *(
            _RECORDS.c[name] == bindparam(prefix + name, type_=_RECORDS.c[name].type)
            for name in ("actor_id", "operation", "key")
        )
    )


# Where the key's look beside another read (``Ahead``) puts its columns and parameters.
_KEYED = "keyed__"
_DIGEST, _RESULT = _KEYED + "request_digest", _KEYED + "_json_text_result"


def _stored_beside(build: Callable[[str], Any], dialect: str) -> sa.Select[Any]:
    """The key's look and ``build``'s select in one statement: each row the select finds
    (one with its columns empty where it finds none), with the stored record's two columns
    beside it (empty where the key is new)."""
    ahead = build(dialect).subquery("ahead")
    one = sa.select(sa.literal_column("1").label("one")).subquery("one")
    stored = [column.label(_KEYED + column.key) for column in _stored_columns()]
    return sa.select(*ahead.c, *stored).select_from(
        one.outerjoin(_RECORDS, _looked_up(_KEYED)).outerjoin(ahead, sa.true())
    )


R = TypeVar("R")


@dataclass(frozen=True)
class Keyed:
    """One keyed call: which mutation, under which key, asking for what."""

    operation: str
    key: str | None
    digest: str  # of what the caller asked for, not of what was generated for it
    field: str = "idempotencyKey"
    # The refusal of another request under a used key (drafts say REQUEST_CONFLICT).
    conflict: type[SignoffError] = IdempotencyKeyReused

    @classmethod
    def of(cls, operation: str, key: str | None, request: Any) -> Keyed:
        return cls(operation, key, sha256_digest(request))


@dataclass(frozen=True)
class Kept(Generic[R]):
    """What a keyed call's record keeps of its result (ids, never whole objects), and how
    a replay reads the result back from it."""

    result_of: Callable[[R], dict[str, Any]]
    replay: Callable[[UnitOfWork, dict[str, Any]], Awaitable[R]]

    @classmethod
    def row(
        cls,
        name: str,
        id_of: Callable[[R], str],
        load: Callable[[UnitOfWork, str], Awaitable[R]],
    ) -> Kept[R]:
        """The usual record: the id of the one row that answers for the result, under
        ``name``, and that row read again."""
        return cls(
            result_of=lambda result: {name: id_of(result)},
            replay=lambda work, stored: load(work, stored[name]),
        )


@dataclass
class Ahead:
    """A read the call makes first, sent in the statement of its key's look (one round
    trip for both); ``records``: what it found, once the look found nothing to replay."""

    select: RecordSelect
    records: list[Any] = field(default_factory=list)


def check_key(key: str | None, field: str = "idempotencyKey") -> None:
    if key is not None and not 1 <= len(key) <= KEY_MAX_CHARS:
        raise ValidationFailed(f"{field} must be 1 to {KEY_MAX_CHARS} characters.", field=field)


async def once(
    work: UnitOfWork,
    viewer: Viewer,
    call: Keyed,
    run: Callable[[], Awaitable[R]],
    kept: Kept[R],
    *,
    ahead: Ahead | None = None,
) -> tuple[R, bool]:
    """Run ``run`` and commit, or replay what the same call returned before, as ``kept``
    says; returns the result and whether it was replayed. ``ahead``: a read ``run``
    takes, made with the key's look."""
    check_key(call.key, call.field)
    stored = await _stored(work, viewer, call, ahead)
    if stored is not None:
        return await kept.replay(work, stored), True
    try:
        result = await run()
    except (SignoffError, IntegrityError):
        # Refused by a state check, or stopped at a unique key of what it inserts (two
        # retries of one proposal meet at its operation key): if it is because the same
        # keyed call has just done the work and committed its record with it, replay that.
        if call.key is None:
            raise
        await work.rollback()
        stored = await _stored(work, viewer, call)
        if stored is None:
            raise
        return await kept.replay(work, stored), True
    try:
        await work.session.flush()
        if call.key is not None:
            _store(work, viewer, call, kept.result_of(result))
            # With the transaction's audit records and change events, in one round trip:
            # the transaction's only statement where it has sent nothing else.
            await work.write_rows(last=True)
    except IntegrityError:
        # The same key at the same moment: the other call won; answer as its replay.
        await work.rollback()
        stored = await _stored(work, viewer, call)
        if stored is None:
            raise
        return await kept.replay(work, stored), True
    await work.commit()
    return result, False


def _store(work: UnitOfWork, viewer: Viewer, call: Keyed, result: dict[str, Any]) -> None:
    """Have the call's record inserted with the transaction's other rows: a statement, not
    an ORM object, as nothing reads it back in the transaction that writes it."""
    row = {
        "id": new_id(),
        "actor_id": viewer.id,
        "operation": call.operation,
        "key": call.key,
        "request_digest": call.digest,
        "result": result,
        "created_at": work.now(),
    }
    work.insert_at_commit(_RECORDS, row)


async def _stored(
    work: UnitOfWork, viewer: Viewer, call: Keyed, ahead: Ahead | None = None
) -> dict[str, Any] | None:
    """The result stored under the call's key, or ``None`` when the key is new (or absent);
    refused when the key was used for a different request. ``ahead``'s records are read
    with it."""
    if call.key is None:
        if ahead is not None:
            (ahead.records,) = await work.select_first([ahead.select])
        return None
    params = {"actor_id": viewer.id, "operation": call.operation, "key": call.key}
    digest: str | None
    result: dict[str, Any]
    if ahead is None:
        (found,) = await work.select_first(
            [RecordSelect(IdempotencyRecord, "idempotency-stored", _stored_select, params)]
        )
        if not found:
            return None
        digest, result = found[0].request_digest, found[0].result
    else:
        digest, result = await _stored_with(work, params, ahead)
        if digest is None:
            return None
    if digest != call.digest:
        # The ids of what the key did the first time (``proposalId``…) help the caller.
        first = {_camel(name): value for name, value in result.items()}
        raise call.conflict(
            f"This {call.field} was already used with a different request; "
            f"use a new {call.field} for a new request.",
            operation=call.operation,
            **first,
        )
    return result


async def _stored_with(
    work: UnitOfWork, params: dict[str, Any], ahead: Ahead
) -> tuple[str | None, Any]:
    """The stored record's digest and result (``None``: the key is new), with ``ahead``'s
    records read in the same statement."""
    select = ahead.select
    beside = RecordSelect(
        select.model,
        ("idempotency-stored-beside", select.kind),
        functools.partial(_stored_beside, select.build),
        {**select.parameters, **{_KEYED + name: value for name, value in params.items()}},
    )
    (rows,) = await work.select_first([beside])
    digest, text = rows[0].__dict__[_DIGEST], rows[0].__dict__[_RESULT]
    for row in rows:
        del row.__dict__[_DIGEST], row.__dict__[_RESULT]
    key = _primary_key(select.model)
    ahead.records = [row for row in rows if getattr(row, key) is not None]
    return digest, None if text is None else jsoncodec.loads(text)


def _primary_key(model: type[Any]) -> str:
    (column,) = table_of(model).primary_key.columns
    return str(column.key)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
