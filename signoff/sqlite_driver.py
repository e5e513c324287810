"""SQLite through aiosqlite, one trip to the connection's thread per statement.

SQLAlchemy's adapter makes three or four trips a statement (cursor, execute, fetch,
close), each a hand-over between threads; ``OneTripCursor`` runs the statement whole in
one, and ending a transaction that is not open makes none; ``read_in_one_trip`` runs
several reads in one (``models.records``). Everything else is the adapter as it ships;
``signoff.database.create_engine`` passes ``dbapi()`` as the engine's DBAPI.
"""

from __future__ import annotations

import collections
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, cast

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)
from sqlalchemy.util import EMPTY_DICT
from sqlalchemy.util.concurrency import await_

# What one trip brings back: the rows, and the cursor's description, rowcount, lastrowid.
_Outcome = tuple[list[Any], Any, int, int | None]


def _run_whole(
    connection: sqlite3.Connection, operation: str, parameters: Any, many: bool
) -> _Outcome:
    """Runs on the connection's thread: one statement from cursor to close."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else []
        return rows, description, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


def _read_all(
    connection: sqlite3.Connection, statements: Sequence[tuple[str, Sequence[Any]]]
) -> list[tuple[list[Any], Any]]:
    """Runs on the connection's thread: each of ``statements`` whole, in order."""
    found: list[tuple[list[Any], Any]] = []
    for operation, parameters in statements:
        cursor = connection.cursor()
        try:
            cursor.execute(operation, parameters)
            found.append((cursor.fetchall(), cursor.description))
        finally:
            cursor.close()
    return found


async def read_in_one_trip(
    adapted: Any, statements: Sequence[tuple[str, Sequence[Any]]]
) -> list[tuple[list[Any], Any]] | None:
    """The rows and description of each of ``statements`` (reads, with their positional
    parameters) in one trip to the thread of ``adapted`` (the DBAPI connection SQLAlchemy
    holds), as its statements are kept apart (its mutex); ``None`` where it is not one of
    ``OneTripConnection``'s. sqlite3's errors are raised as they are."""
    if not isinstance(adapted, OneTripConnection):
        return None
    connection: aiosqlite.Connection = adapted._connection  # type: ignore[assignment]
    on_thread = cast("Callable[..., Awaitable[list[tuple[list[Any], Any]]]]", connection._execute)
    async with adapted._execute_mutex:
        return await on_thread(_read_all, connection._conn, statements)


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A cursor whose statements each make one trip to the connection's thread.

    It holds no aiosqlite cursor: each statement opens and closes its own sqlite3
    cursor on the thread, and the results stay here (buffered, as SQLAlchemy's own
    adapter buffers them for a client-side cursor).
    """

    __slots__ = ("_description", "_lastrowid", "_rowcount")

    def __init__(self, adapt_connection: AsyncAdapt_aiosqlite_connection) -> None:
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return 1

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        """Every row is fetched in the statement's trip; there is nothing to size."""

    def execute(self, operation: Any, parameters: Any = None) -> Any:
        return self._trip(operation, () if parameters is None else parameters, many=False)

    def executemany(self, operation: Any, seq_of_parameters: Any) -> Any:
        return self._trip(operation, seq_of_parameters, many=True)

    def _trip(self, operation: str, parameters: Any, *, many: bool) -> None:
        try:
            await_(self._trip_async(operation, parameters, many))
        except Exception as error:
            self._adapt_connection._handle_exception(error)

    async def _trip_async(self, operation: str, parameters: Any, many: bool) -> None:
        connection: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        # aiosqlite's own way onto the thread (its cursors use it); untyped there.
        on_thread = cast("Callable[..., Awaitable[_Outcome]]", connection._execute)
        async with self._adapt_connection._execute_mutex:
            outcome = await on_thread(_run_whole, connection._conn, operation, parameters, many)
        rows, self._description, self._rowcount, self._lastrowid = outcome
        self._rows = collections.deque(rows)

    async def _async_soft_close(self) -> None:
        """The sqlite3 cursor closed at the end of its trip; the results stay readable."""

    def close(self) -> None:
        self._rows.clear()

    def nextset(self) -> None:
        """SQLite statements have one result set."""
        self._rows.clear()


class OneTripConnection(AsyncAdapt_aiosqlite_connection):
    """Hands out ``OneTripCursor``s, and makes no trip to end a transaction that is not open:
    SQLAlchemy rolls back every connection it returns to the pool, even after a commit, and
    read-only sessions, which never begin one, still end one: a trip each for nothing.
    SQLAlchemy awaits each call, so ``in_transaction`` is read here, as aiosqlite reads it."""

    __slots__ = ()
    _cursor_cls: type[AsyncAdapt_aiosqlite_cursor] = OneTripCursor

    def _in_transaction(self) -> bool:
        connection: sqlite3.Connection | None = self._connection._connection
        return connection is not None and connection.in_transaction

    def commit(self) -> None:
        if self._in_transaction():
            super().commit()

    def rollback(self) -> None:
        if self._in_transaction():
            super().rollback()


class OneTripDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """SQLAlchemy's aiosqlite DBAPI module, handing out ``OneTripConnection``s."""

    def connect(self, *arg: Any, **kw: Any) -> OneTripConnection:
        adapted = super().connect(*arg, **kw)
        return OneTripConnection(self, adapted._connection)


def dbapi() -> OneTripDBAPI:
    """The DBAPI module to give ``create_async_engine`` as ``module=``."""
    return OneTripDBAPI(aiosqlite, sqlite3)
