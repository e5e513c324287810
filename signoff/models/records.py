"""Records: a row's columns as attributes, standing in for a model instance where a row is
only read (pages, DataLoaders, a decision's reads). Never add one to a session.

Cheaper to build and read than ORM instances or Core rows. JSON columns are decoded when
first read; reads by key and fixed-shape selects are compiled once per kind and, on
PostgreSQL, go to psycopg in one pipeline; a failure is read again through SQLAlchemy in
autocommit, raised through its handling in a transaction (docs/design.md section 12).
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
from collections.abc import AsyncIterator, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, tzinfo
from typing import Any, TypeVar

import psycopg
from sqlalchemy import (
    ARRAY,
    JSON,
    ColumnElement,
    Connection,
    Dialect,
    Result,
    Select,
    Table,
    TableClause,
    Text,
    TextClause,
    Update,
    any_,
    bindparam,
    cast,
)
from sqlalchemy import select as select_rows
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql import visitors
from sqlalchemy.sql.compiler import ExpandedState
from sqlalchemy.sql.expression import ColumnClause
from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import jsoncodec, sqlite_driver
from signoff.models import pipeline
from signoff.models.arrays import text_array
from signoff.models.base import UTCDateTime

M = TypeVar("M", bound=SQLModel)


class Record:
    """A row's columns as attributes."""

    __slots__ = ("__dict__",)


# Where a record keeps a JSON column's text until the column is first read.
_JSON_TEXT = "_json_text_"


class _JSONText:
    """A record's JSON column, selected as text (``record_columns``) and decoded on first
    read; the value then sits in the record's dictionary, which later reads find first
    (this descriptor defines no ``__set__``)."""

    __slots__ = ("name", "text")

    def __init__(self, name: str) -> None:
        self.name = name
        self.text = _JSON_TEXT + name

    def __get__(self, record: Any, owner: type[Any] | None = None) -> Any:
        if record is None:
            return self
        values = record.__dict__
        text = values[self.text]
        value = None if text is None else jsoncodec.loads(text)
        values[self.name] = value
        return value


@functools.cache
def record_class(model: type[SQLModel]) -> type[Record]:
    """The class of ``model``'s records: a ``Record`` that decodes its JSON columns when
    they are first read. Rows whose JSON came decoded (selected as columns, not through
    ``record_columns``) carry the values in their dictionary, which takes precedence."""
    lazy = {name: _JSONText(name) for name in _json_columns(model)}
    # The model's properties read columns only (a target's ``is_active``): records have them.
    derived = {name: value for name, value in vars(model).items() if isinstance(value, property)}
    return type(f"{model.__name__}Record", (Record,), {"__slots__": (), **derived, **lazy})


def _json_columns(model: type[SQLModel]) -> list[str]:
    return [column.key for column in table_of(model).columns if isinstance(column.type, JSON)]


def record_columns(model: type[SQLModel]) -> list[ColumnElement[Any]]:
    """What to select for records of ``model``: its columns, each JSON one as its text
    (decoded when first read)."""
    return [
        cast(column, Text).label(_JSON_TEXT + column.key)
        if isinstance(column.type, JSON)
        else column
        for column in table_of(model).columns
    ]


def records(model: type[M], result: Result[Any]) -> list[M]:
    """``result``'s rows (selected from ``model``'s table) as records of ``model``."""
    columns = list(result.keys())
    kind = record_class(model)
    found: list[Any] = []
    for row in result:
        record = kind.__new__(kind)
        record.__dict__ = dict(zip(columns, row, strict=True))
        found.append(record)
    return found


def as_records(model: type[M], rows: Sequence[Mapping[str, Any]]) -> list[M]:
    """``rows`` (every column of ``model``'s table, by name: rows about to be inserted)
    as records of ``model``."""
    kind = record_class(model)
    found: list[Any] = []
    for row in rows:
        record = kind.__new__(kind)
        record.__dict__ = dict(row)
        found.append(record)
    return found


def table_of(model: type[SQLModel]) -> Table:
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


@dataclass(frozen=True)
class Via:
    """Keys reached through another table: its ``pick`` column in its rows whose
    ``column`` is one of the keys (the approvers of proposals: ``Via(Approval,
    "approver_id", "proposal_id")``), so that a read need not wait for another."""

    model: type[SQLModel]
    pick: str
    column: str


@dataclass(frozen=True)
class RowsWhere:
    """A read of the ``model`` rows whose ``column`` is one of ``keys`` (or, with
    ``via``, one of the values ``via`` reaches from ``keys``)."""

    model: type[SQLModel]
    column: str
    keys: Sequence[str]
    order_by: str | None = None
    via: Via | None = None


async def rows_where(
    session: AsyncSession,
    model: type[M],
    column: str,
    keys: Sequence[str],
    order_by: str | None = None,
) -> list[M]:
    """Records of the ``model`` rows whose ``column`` is one of ``keys``."""
    (found,) = await read_all(session, [RowsWhere(model, column, keys, order_by)])
    return found


async def read_all(session: AsyncSession, reads: Sequence[RowsWhere]) -> list[list[Any]]:
    """The records of each of ``reads``, in one round trip where the connection allows."""
    connection = await session.connection()
    dialect = connection.dialect
    plans = [_plan_of(_read_kind(read), read.model, _read_builder(read), dialect) for read in reads]
    parameters = [{"keys": list(read.keys)} for read in reads]
    return await _run(connection, plans, parameters)


async def select_records(
    session: AsyncSession,
    model: type[M],
    kind: Hashable,
    build: Callable[[str], Select[Any] | Update],
    parameters: dict[str, Any],
) -> list[M]:
    """Records of what a select of ``model``'s columns (or an ``UPDATE … RETURNING``
    them, in the session's transaction) finds with ``parameters``.

    ``build(dialect_name)`` makes the statement, a named ``bindparam`` for each value
    that varies; it runs once per ``kind`` (anything hashable that decides the text).
    """
    (found,) = await select_all(session, [RecordSelect(model, kind, build, parameters)])
    return found


@dataclass(frozen=True)
class RecordSelect:
    """One statement of ``select_all``, given as ``select_records`` takes it; ``writes``:
    whether a select writes too (data-modifying ``WITH`` parts), as an update does."""

    model: type[SQLModel]
    kind: Hashable
    build: Callable[[str], Select[Any] | Update]
    parameters: dict[str, Any]
    writes: bool = False


async def select_all(session: AsyncSession, selects: Sequence[RecordSelect]) -> list[list[Any]]:
    """The records of each of ``selects`` (``select_records``), in one round trip where
    the connection allows: reads that do not wait for one another's answers."""
    return await select_all_on(await session.connection(), selects)


async def select_all_on(
    connection: AsyncConnection, selects: Sequence[RecordSelect]
) -> list[list[Any]]:
    """``select_all`` on a session's connection."""
    dialect = connection.dialect
    plans = [_plan_of(each.kind, each.model, each.build, dialect, each.writes) for each in selects]
    return await _run(connection, plans, [each.parameters for each in selects])


async def select_all_first(
    connection: AsyncConnection, selects: Sequence[RecordSelect]
) -> list[list[Any]]:
    """``select_all_on`` before the session's transaction has sent anything: on PostgreSQL
    each statement in a transaction of its own (autocommit), with the snapshot it would
    have had in the transaction, as every statement of a READ COMMITTED one takes its own;
    the transaction's ``BEGIN`` then waits for its first write."""
    if connection.dialect.name == "postgresql":
        driver = await driver_of(connection)
        if not driver.autocommit and driver.info.transaction_status == IDLE:
            async with autocommitted(connection, driver):
                return await select_all_on(connection, selects)
    return await select_all_on(connection, selects)


@contextlib.asynccontextmanager
async def autocommitted(
    connection: AsyncConnection, driver: psycopg.AsyncConnection[Any]
) -> AsyncIterator[None]:
    """Statements sent meanwhile on ``connection`` (a session's, whose transaction has sent
    nothing yet; ``driver`` its psycopg connection) each commit on their own. Afterwards
    it is in a transaction again, or invalidated where it cannot be (a statement cut
    short), so that the pool never hands it out in autocommit."""
    await driver.set_autocommit(True)
    try:
        yield
    finally:
        if driver.closed or driver.info.transaction_status != IDLE:
            await connection.invalidate()
        else:
            await driver.set_autocommit(False)


@dataclass(frozen=True)
class Along:
    """A read sent with a select, of what the select finds: the ``model`` rows whose
    ``column`` is one of the ``pick`` values of its rows (or, with ``via``, one of what
    ``via`` reaches from them), as a page's relations are read with the page."""

    model: type[SQLModel]
    column: str
    pick: str
    order_by: str | None = None
    via: Via | None = None


# A read-only transaction whose statements share one snapshot: a select and the reads
# along it see the same rows, as the reads by keys that follow a select see the rows
# it found.
SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


async def select_along(
    session: AsyncSession, select: RecordSelect, along: Sequence[Along]
) -> tuple[list[Any], list[list[Any]]] | None:
    """The records of ``select`` and of each of ``along``, in one round trip and one
    snapshot; ``None`` where the connection cannot take them so (SQLite, a session in a
    transaction, a failure, nothing along): the caller then reads by keys what
    ``select`` found."""
    if not along or select.writes:
        return None
    connection = await session.connection()
    if connection.dialect.name != "postgresql":
        return None
    driver = await driver_of(connection)
    if not driver.autocommit or driver.info.transaction_status != IDLE:
        return None
    dialect = connection.dialect
    plans = [_plan_of(select.kind, select.model, select.build, dialect)]
    for each in along:
        build = functools.partial(_rows_along, each, select.build)
        plans.append(_plan_of((select.kind, each), each.model, build, dialect))
    found = await _pipelined(connection, plans, [select.parameters] * len(plans), snapshot=True)
    return None if found is None else (found[0], found[1:])


def _rows_along(
    read: Along, source: Callable[[str], Select[Any] | Update], dialect: str
) -> Select[Any]:
    """``read``'s rows, from the rows ``source``'s select finds (with its parameters)."""
    found = source(dialect)
    assert isinstance(found, Select), "reads go along a select"
    picked = found.with_only_columns(found.selected_columns[read.pick])
    return _rows_matching(read.model, read.column, read.order_by, read.via, lambda c: c.in_(picked))


def _read_kind(read: RowsWhere) -> Hashable:
    return (read.model, read.column, read.order_by, read.via)


def _read_builder(read: RowsWhere) -> Callable[[str], Select[Any]]:
    return functools.partial(_rows_with, read.model, read.column, read.order_by, read.via)


async def _run(
    connection: AsyncConnection, plans: Sequence[_Plan], parameters: Sequence[dict[str, Any]]
) -> list[list[Any]]:
    if connection.dialect.name == "postgresql":
        found = await _pipelined(connection, plans, parameters)
        if found is not None:
            return found
    elif connection.dialect.name == "sqlite" and not any(plan.writes for plan in plans):
        found = await _in_one_trip(connection, plans, parameters)
        if found is not None:
            return found
    return [
        records(plan.model, await connection.execute(plan.stmt, params))
        for plan, params in zip(plans, parameters, strict=True)
    ]


async def _in_one_trip(
    connection: AsyncConnection, plans: Sequence[_Plan], parameters: Sequence[dict[str, Any]]
) -> list[list[Any]] | None:
    """SQLite: ``plans`` (reads) in one trip to the connection's thread, without
    SQLAlchemy's execution of each (``sqlite_driver.read_in_one_trip``), or ``None``
    where that cannot be done (not the one-trip driver, a connection closed, a statement
    whose text is rendered per value). A failure is read again through SQLAlchemy, which
    raises it as it raises any statement's: a failed read leaves SQLite's transaction as
    it was."""
    sync = connection.sync_connection
    if sync is None or sync.closed or sync.invalidated:
        return None
    sent: list[tuple[str, tuple[Any, ...]]] = []
    for plan, params in zip(plans, parameters, strict=True):
        statement = plan.positional(params)
        if statement is None:
            return None
        sent.append(statement)
    for sql, values in sent:
        sync.dispatch.before_cursor_execute(sync, None, sql, values, None, False)
    try:
        found = await sqlite_driver.read_in_one_trip(sync.connection.dbapi_connection, sent)
    except sqlite3.Error:
        return None
    if found is None:
        return None
    return [
        plan.records_of(rows, description)
        for plan, (rows, description) in zip(plans, found, strict=True)
    ]


async def selected_after(
    connection: AsyncConnection,
    writes: Sequence[tuple[str, Sequence[Any]]],
    selects: Sequence[RecordSelect],
) -> list[list[Any]] | None:
    """The records of ``selects``, each run after ``writes`` (statements with their
    parameters as psycopg takes them, answering nothing) in one pipeline, in a write
    transaction on PostgreSQL; ``None`` where the connection cannot take them so (the
    caller then sends each its own way). A failure of any is raised as SQLAlchemy raises
    it, and those after it are not run."""
    dialect = connection.dialect
    plans = [_plan_of(each.kind, each.model, each.build, dialect, each.writes) for each in selects]
    parameters = [each.parameters for each in selects]
    return await _pipelined(connection, plans, parameters, writes=writes)


async def _pipelined(
    connection: AsyncConnection,
    plans: Sequence[_Plan],
    parameters: Sequence[dict[str, Any]],
    *,
    writes: Sequence[tuple[str, Sequence[Any]]] = (),
    snapshot: bool = False,
) -> list[list[Any]] | None:
    """``plans`` through psycopg in one pipeline, after ``writes`` (in a write transaction
    only), or None where that cannot be done safely (a connection in an unknown state)
    or failed in autocommit (then nothing was kept: the caller reads again). In a write
    transaction a failure has ended the transaction, so it is raised as SQLAlchemy raises
    it (wrapped, a broken connection invalidated). With ``snapshot`` (autocommit only),
    ``plans`` run in one read-only transaction of one snapshot (``SNAPSHOT``)."""
    driver = await driver_of(connection)
    status = driver.info.transaction_status
    if driver.autocommit:
        # A write is never read again after a failure: it goes through SQLAlchemy.
        if (
            status != psycopg.pq.TransactionStatus.IDLE
            or writes
            or any(plan.writes for plan in plans)
        ):
            return None
    elif status not in WRITING:
        return None
    bound = [plan.bound(params) for plan, params in zip(plans, parameters, strict=True)]
    if driver.autocommit and all(plan.raw is not None for plan in plans):
        return await _read_raw(connection, driver, plans, bound, snapshot)
    cursors = [driver.cursor() for _ in plans]
    sync = connection.sync_connection
    assert sync is not None  # an AsyncConnection from a session is started
    written = psycopg.AsyncRawCursor(driver)
    for sql, values in writes:
        sync.dispatch.before_cursor_execute(sync, written, sql, values, None, False)
    for cursor, plan, params in zip(cursors, plans, bound, strict=True):
        sync.dispatch.before_cursor_execute(sync, cursor, plan.sql, params, None, False)
    try:
        rows = await _fetch_all(cursors, plans, bound, written, writes, snapshot)
    except psycopg.Error as failed:
        if driver.autocommit:
            if snapshot:
                await _end_snapshot(connection, driver)
            return None
        first_sql, first = writes[0] if writes else (plans[0].sql, bound[0])
        await connection.run_sync(raise_as_sqlalchemy, failed, first_sql, first)
        raise  # not reached: the line above raises
    except BaseException:
        # Cancelled mid-pipeline: the connection's protocol state is unknown, so the pool
        # must not hand it out again.
        await connection.invalidate()
        raise
    return [
        plan.records(found, _types(cursor), cursor.connection.info.timezone)
        for plan, found, cursor in zip(plans, rows, cursors, strict=True)
    ]


def _types(cursor: psycopg.AsyncCursor[Any]) -> list[int]:
    description = cursor.description
    assert description is not None
    return [column.type_code for column in description]


async def _read_raw(
    connection: AsyncConnection,
    driver: psycopg.AsyncConnection[Any],
    plans: Sequence[_Plan],
    bound: Sequence[dict[str, Any]],
    snapshot: bool,
) -> list[list[Any]] | None:
    """``_pipelined`` for reads in autocommit, through libpq's pipeline (``pipeline.read``):
    None where a statement failed (nothing was kept: the caller reads again)."""
    statements: list[tuple[pipeline.RawStatement, dict[str, Any]]] = []
    for plan, params in zip(plans, bound, strict=True):
        assert plan.raw is not None  # checked by the caller
        statements.append((plan.raw, params))
    sync = connection.sync_connection
    assert sync is not None  # an AsyncConnection from a session is started
    # Listeners see a cursor of the connection, as for any statement; none runs on it.
    cursor = psycopg.AsyncRawCursor(driver)
    for plan, params in zip(plans, bound, strict=True):
        sync.dispatch.before_cursor_execute(sync, cursor, plan.sql, params, None, False)
    try:
        answers = await pipeline.read(
            driver,
            statements,
            before=[SNAPSHOT.encode()] if snapshot else [],
            after=[b"COMMIT"] if snapshot else [],
        )
    except pipeline.StatementFailed:
        if snapshot:
            await _end_snapshot(connection, driver)
        return None
    except psycopg.Error:
        # The connection broke, or ``pipeline.read`` closed it: SQLAlchemy's read finds it
        # so and fails as any statement on it fails.
        return None
    except BaseException:
        # Cancelled or broken mid-pipeline (``pipeline.read`` closed the connection): the
        # pool must not hand it out again.
        await connection.invalidate()
        raise
    timezone = driver.info.timezone
    return [
        plan.records(answer.rows, answer.types, timezone)
        for plan, answer in zip(plans, answers, strict=True)
    ]


async def _end_snapshot(connection: AsyncConnection, driver: psycopg.AsyncConnection[Any]) -> None:
    """Roll back the snapshot's transaction that a failure left open, so that the connection
    is idle in autocommit again (the pool would not roll it back); invalidated where that
    fails. A connection that broke is left to the caller's read through SQLAlchemy."""
    if driver.info.transaction_status not in (INTRANS, INERROR):
        return
    try:
        await driver.rollback()
    except psycopg.Error:
        await connection.invalidate()


async def driver_of(connection: AsyncConnection) -> psycopg.AsyncConnection[Any]:
    """psycopg's connection under ``connection``: taken as it is while SQLAlchemy's holds
    one, as ``get_raw_connection`` would without its trip through a new greenlet, and
    through that (which may reconnect) once closed or invalidated."""
    sync = connection.sync_connection
    if sync is not None and not sync.closed and not sync.invalidated:
        raw = sync.connection
    else:
        raw = await connection.get_raw_connection()
    driver: psycopg.AsyncConnection[Any] = raw.driver_connection  # type: ignore[assignment]
    return driver


# A write transaction's connection, before its first statement or inside the transaction.
IDLE = psycopg.pq.TransactionStatus.IDLE
INTRANS = psycopg.pq.TransactionStatus.INTRANS
INERROR = psycopg.pq.TransactionStatus.INERROR
WRITING = (IDLE, INTRANS)


def raise_as_sqlalchemy(sync: Connection, failed: psycopg.Error, sql: str, parameters: Any) -> None:
    """Raise ``failed`` as SQLAlchemy raises a statement's failure: its handling (the
    error's wrapping, ``handle_error`` listeners, invalidating a broken connection) is
    the one every other statement gets."""
    try:
        raise failed
    except psycopg.Error as error:
        sync._handle_dbapi_exception(error, sql, parameters, None, None)


async def _fetch_all(
    cursors: Sequence[psycopg.AsyncCursor[Any]],
    plans: Sequence[_Plan],
    parameters: Sequence[dict[str, Any]],
    written: psycopg.AsyncCursor[Any],
    writes: Sequence[tuple[str, Sequence[Any]]],
    snapshot: bool = False,
) -> list[list[Any]]:
    if len(plans) == 1 and not writes and not snapshot:
        await cursors[0].execute(plans[0].sql, parameters[0])
    else:
        async with cursors[0].connection.pipeline():
            if snapshot:
                await written.execute(SNAPSHOT)
            for sql, values in writes:
                await written.execute(sql, values)
            for cursor, plan, params in zip(cursors, plans, parameters, strict=True):
                await cursor.execute(plan.sql, params)
            if snapshot:
                await written.execute("COMMIT")
    return [await cursor.fetchall() for cursor in cursors]


class _Plan:
    """One kind of read, compiled once: the statement, its text, its columns, the values
    built into it, the bind processors SQLAlchemy would run on its parameters, and the
    result processors it would run on its columns (known from the first result's types)."""

    def __init__(
        self,
        model: type[SQLModel],
        stmt: Select[Any] | Update,
        dialect: Dialect,
        writes: bool = False,
    ) -> None:
        self.model = model
        self.stmt = stmt
        self.writes = writes or isinstance(stmt, Update)
        compiled = stmt.compile(dialect=dialect)
        # Expanding parameters are rendered per execution: such a statement has no one
        # text (on PostgreSQL, lists travel as arrays instead).
        assert dialect.name != "postgresql" or not compiled.post_compile_params
        self.sql = compiled.string
        names = compiled.bind_names
        self._compiled = compiled
        # SQLite: the text and parameter order for each length of the lists it expands.
        self._expanded: dict[tuple[int, ...], ExpandedState] = {}
        self._expanding = [names[bind] for bind in compiled.post_compile_params]
        self._positional = bool(compiled.positional) and not compiled.literal_execute_params
        # The values built into the statement (``values(state="OPEN")``, an ORM column's
        # ``onupdate``), under the names its text gives them; the named parameters
        # without a value must each be given.
        built = compiled.construct_params(_check=False)
        self._built = {name: built[name] for bind, name in names.items() if not bind.required}
        self._required = frozenset(names[bind] for bind in names if bind.required)
        # Once per name: a value the statement uses twice (a page's cursor) is one value.
        self._binds = list(
            {
                names[bind]: process
                for bind in names
                if (process := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None
            }.items()
        )
        self._arrays = [names[bind] for bind in names if isinstance(bind.type, ARRAY)]
        self._columns = list(stmt.exported_columns)
        self._names = [_key_of(column) for column in self._columns]
        # The text as libpq takes it, for reads in autocommit (``pipeline.read``).
        self.raw = pipeline.raw_statement(self.sql) if dialect.name == "postgresql" else None
        self._record_class = record_class(model)
        self._dialect = dialect
        self._processors: tuple[_Processors, _Processors] | None = None

    def bound(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """``parameters`` as psycopg takes them: what SQLAlchemy would send, except that a
        list of strings travels as the text of an array (``text_array``)."""
        missing = self._required - parameters.keys()
        assert not missing, f"no value for {sorted(missing)}"
        bound = {**self._built, **parameters}
        for name, process in self._binds:
            if name in bound:
                bound[name] = process(bound[name])
        for name in self._arrays:
            values = bound.get(name)
            if isinstance(values, list) and set(map(type, values)) <= {str}:
                bound[name] = text_array(values)
        return bound

    def positional(self, parameters: dict[str, Any]) -> tuple[str, tuple[Any, ...]] | None:
        """The text and positional parameters SQLAlchemy would send to sqlite3 for
        ``parameters`` (each list expanded, every bind processed), or ``None`` where the
        text would render a value (``literal_execute``)."""
        if not self._positional:
            return None
        missing = self._required - parameters.keys()
        assert not missing, f"no value for {sorted(missing)}"
        values = {**self._built, **parameters}
        lengths = tuple(len(values[name]) for name in self._expanding)
        state = self._expanded.get(lengths)
        if state is None:
            state = self._expanded[lengths] = self._compiled.construct_expanded_state(values)
        for name, expanded in state.parameter_expansion.items():
            values.update(zip(expanded, values.pop(name), strict=True))
        for name, process in self._binds:
            if name in values:
                values[name] = process(values[name])
        for name, process in state.processors.items():
            values[name] = process(values[name])
        assert state.positiontup is not None
        return state.statement, tuple(values[name] for name in state.positiontup)

    def records_of(self, rows: list[Any], description: Any) -> list[Any]:
        """``rows`` of this read (``description``: the DBAPI cursor's) as records, through
        the result processors SQLAlchemy would run (SQLite, whose types come from the
        statement: its description names none)."""
        processors = self._processors
        if processors is None:
            processors = self._processors = self._processors_for(
                [described[1] for described in description]
            )
        return self._records(rows, processors[0])

    def records(self, rows: list[Any], types: list[int], timezone: tzinfo) -> list[Any]:
        """``rows`` (of columns of the type oids ``types``, read on a connection whose
        session time zone is ``timezone``) as records."""
        processors = self._processors
        if processors is None:
            processors = self._processors = self._processors_for(types)
        always, zoned = processors
        # A connection whose session time zone is UTC loads timestamptz values in UTC
        # already (``create_engine`` asks for it): UTCDateTime would return each unchanged.
        if zoned and timezone is not UTC:
            always = always + zoned
        return self._records(rows, always)

    def _records(self, rows: list[Any], processors: _Processors) -> list[Any]:
        names = self._names
        kind = self._record_class
        found: list[Any] = []
        for row in rows:
            values = dict(zip(names, row, strict=True))
            for index, process in processors:
                name = names[index]
                values[name] = process(values[name])
            record = kind.__new__(kind)
            record.__dict__ = values
            found.append(record)
        return found

    def _processors_for(self, types: list[int]) -> tuple[_Processors, _Processors]:
        """The result processors SQLAlchemy would run on each column (of the type oids
        ``types``), in two lists: those of UTCDateTime's timestamptz columns, which change
        nothing when the connection loads them in UTC, and the others."""
        assert len(types) == len(self._columns)
        always: _Processors = []
        zoned: _Processors = []
        for index, (column, type_code) in enumerate(zip(self._columns, types, strict=True)):
            impl = column.type.dialect_impl(self._dialect)
            process = impl.result_processor(self._dialect, type_code)
            if process is None:
                continue
            if isinstance(column.type, UTCDateTime) and type_code == _TIMESTAMPTZ:
                zoned.append((index, process))
            else:
                always.append((index, process))
        return always, zoned


_Processors = list[tuple[int, Callable[[Any], Any]]]
# PostgreSQL's type oid of timestamptz.
_TIMESTAMPTZ = 1184


def _key_of(column: ColumnElement[Any]) -> str:
    key = column.key
    assert key is not None, "records select named columns"
    return key


# Plans by (kind, dialect class): the class decides the text and the processors, and the
# cache keeps no engine alive.
_PLANS: dict[tuple[Hashable, type[Dialect]], _Plan] = {}


def _plan_of(
    kind: Hashable,
    model: type[SQLModel],
    build: Callable[[str], Select[Any] | Update],
    dialect: Dialect,
    writes: bool = False,
) -> _Plan:
    key = (kind, type(dialect))
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _Plan(model, build(dialect.name), dialect, writes)
    return plan


# The tables each kind of select reads, by (kind, dialect class); ``None``: not known.
_TABLES: dict[tuple[Hashable, type[Dialect]], frozenset[str] | None] = {}


def tables_read(select: RecordSelect, dialect: Dialect) -> frozenset[str] | None:
    """The names of the tables ``select``'s statement names anywhere in it (subqueries
    included), or ``None`` where it cannot tell: a part of it is SQL text."""
    key = (select.kind, type(dialect))
    if key not in _TABLES:
        _TABLES[key] = _tables_in(select.build(dialect.name))
    return _TABLES[key]


def _tables_in(stmt: Select[Any] | Update) -> frozenset[str] | None:
    found: set[str] = set()
    for element in visitors.iterate(stmt):
        if isinstance(element, TextClause) or (
            # A literal column may name a table in its text (``EXISTS``'s ``*`` does not).
            isinstance(element, ColumnClause) and element.is_literal and element.name != "*"
        ):
            return None
        if isinstance(element, TableClause):
            found.add(element.name)
    return frozenset(found)


def one_of(column: ColumnElement[Any], name: str, dialect: str) -> ColumnElement[bool]:
    """``column`` is one of the list parameter ``name``.

    On PostgreSQL the list travels as one array (``= ANY(:name)``): one statement text
    whatever its length, which the server prepares once, where ``IN (:k1, :k2, …)`` is
    rendered anew for each length.
    """
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=postgresql.ARRAY(column.type)))
    return column.in_(bindparam(name, expanding=True))


def _rows_with(
    model: type[SQLModel], column: str, order_by: str | None, via: Via | None, dialect: str
) -> Select[Any]:
    """``model`` rows whose ``column`` is one of the ``keys`` parameter (or of what
    ``via`` reaches from them)."""
    return _rows_matching(model, column, order_by, via, lambda c: one_of(c, "keys", dialect))


def _rows_matching(
    model: type[SQLModel],
    column: str,
    order_by: str | None,
    via: Via | None,
    matches: Callable[[Any], Any],
) -> Select[Any]:
    """``model`` rows whose ``column`` ``matches`` (or is one of what ``via`` reaches from
    the rows of ``via``'s model whose column ``matches``), ordered by ``order_by``."""
    table = table_of(model)
    columns = record_columns(model)
    if via is None:
        stmt = select_rows(*columns).where(matches(table.c[column]))
    else:
        through = table_of(via.model)
        reached = select_rows(through.c[via.pick]).where(matches(through.c[via.column]))
        stmt = select_rows(*columns).where(table.c[column].in_(reached))
    if order_by is not None:
        stmt = stmt.order_by(table.c[order_by])
    return stmt
