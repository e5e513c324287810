"""Reads in autocommit sent through libpq's pipeline as psycopg exposes it (``psycopg.pq``):
every statement queued, one Sync, one flush, the results collected to the Sync. psycopg's
pipeline converts, flushes and polls per statement, most of a page's read CPU; here a text
is converted once (``RawStatement``), parameters dumped and rows loaded by psycopg's
``Transformer`` as a cursor does, and a statement prepared once per connection, as
psycopg prepares one that repeats (docs/design.md, Read paths)."""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import abc, pq
from psycopg.adapt import PyFormat, Transformer

OK = (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK)


@dataclass(frozen=True)
class RawStatement:
    """A statement in psycopg's ``%(name)s`` style as libpq takes it: its text with ``$n``
    placeholders, and the names of its parameters in their order."""

    sql: bytes
    names: tuple[str, ...]


# ``%(name)s`` or ``%%``; any other ``%`` is a placeholder this module does not convert.
_PLACEHOLDER = re.compile(r"%(?:\((\w+)\)s|(%))|(%)")


def raw_statement(sql: str) -> RawStatement | None:
    """``sql`` (named placeholders, ``%%`` for a percent sign) as libpq takes it, or None
    where it holds a placeholder of another kind (positional, binary)."""
    names: list[str] = []
    unknown = False

    def convert(match: re.Match[str]) -> str:
        nonlocal unknown
        name, percent, other = match.groups()
        if other is not None:
            unknown = True
            return "%"
        if percent is not None:
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    converted = _PLACEHOLDER.sub(convert, sql)
    if unknown:
        return None
    return RawStatement(converted.encode(), tuple(names))


@dataclass(frozen=True)
class Answer:
    """One statement's rows (tuples of Python values, as a cursor's ``fetchall``) and the
    type oid of each of its columns."""

    rows: list[tuple[Any, ...]]
    types: list[int]


class StatementFailed(psycopg.DatabaseError):
    """A statement of a raw pipeline failed (its message is the server's)."""


# The statements prepared on each connection, by text and parameter types; a connection
# whose prepared statements are not known for sure (a pipeline failed) prepares nothing.
_PREPARED: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], dict[Any, bytes] | None] = (
    weakref.WeakKeyDictionary()
)
# Names of prepared statements: psycopg's own are ``_pg3_<n>``.
_PREFIX = "_signoff_read_"
PREPARED_MAX = 200


async def read(
    driver: psycopg.AsyncConnection[Any],
    statements: Sequence[tuple[RawStatement, dict[str, Any]]],
    *,
    before: Sequence[bytes] = (),
    after: Sequence[bytes] = (),
) -> list[Answer]:
    """The answers of ``statements`` (each with its parameters by name), sent in one
    pipeline after the plain commands ``before`` and followed by ``after`` (a snapshot's
    ``BEGIN`` and ``COMMIT``). A failed statement raises ``StatementFailed`` once the
    pipeline has ended; anything else that fails closes the connection, whose protocol
    state is then unknown (SQLAlchemy finds it closed, as one that broke)."""
    async with driver.lock:
        pgconn = driver.pgconn
        if pgconn.pipeline_status != pq.PipelineStatus.OFF:
            raise psycopg.InterfaceError("the connection is in pipeline mode already")
        transformer = Transformer(driver)
        prepared = _PREPARED.get(driver, {})
        pgconn.enter_pipeline_mode()
        try:
            for command in before:
                pgconn.send_query_params(command, None)
            for statement, parameters in statements:
                _send(pgconn, transformer, prepared, statement, parameters)
            for command in after:
                pgconn.send_query_params(command, None)
            pgconn.pipeline_sync()
            results = await _results(pgconn)
            pgconn.exit_pipeline_mode()
        except BaseException:
            pgconn.finish()
            raise
    failed = next((r for r in results if r.status not in OK), None)
    if failed is not None:
        # Which statements were prepared is no longer certain.
        _PREPARED[driver] = None
        message = failed.error_message.decode(errors="replace") or str(failed.status)
        raise StatementFailed(message)
    _PREPARED[driver] = prepared
    answers: list[Answer] = []
    # The commands and prepares answer no rows; every select answers rows, if none.
    for result in results:
        if result.status == pq.ExecStatus.TUPLES_OK:
            transformer.set_pgresult(result)
            rows = transformer.load_rows(0, result.ntuples, tuple)
            answers.append(Answer(rows, [result.ftype(i) for i in range(result.nfields)]))
    assert len(answers) == len(statements), "one result of rows per statement"
    return answers


def _send(
    pgconn: pq.abc.PGconn,
    transformer: abc.Transformer,
    prepared: dict[Any, bytes] | None,
    statement: RawStatement,
    parameters: dict[str, Any],
) -> None:
    """Queue ``statement``, prepared on the connection the first time it runs there (as
    psycopg's cursors prepare a statement that repeats), unless ``prepared`` is None."""
    values = [parameters[name] for name in statement.names]
    dumped = transformer.dump_sequence(values, [PyFormat.AUTO] * len(values))
    types = transformer.types
    formats = transformer.formats
    key = (statement.sql, types)
    name = None if prepared is None else prepared.get(key)
    if name is None and prepared is not None and len(prepared) < PREPARED_MAX:
        name = prepared[key] = f"{_PREFIX}{len(prepared)}".encode()
        pgconn.send_prepare(name, statement.sql, param_types=types)
    if name is None:
        pgconn.send_query_params(statement.sql, dumped, types, formats)
    else:
        pgconn.send_query_prepared(name, dumped, formats)


async def _results(pgconn: pq.abc.PGconn) -> list[pq.abc.PGresult]:
    """Every result up to the pipeline's Sync, the output flushed first. The answers of a
    page come in several pieces: each is taken in by the event loop's callback
    (``_Collector``), and the read resumes once, when the Sync has come."""
    loop = asyncio.get_running_loop()
    socket = pgconn.socket
    while pgconn.flush():
        await _writable(loop, socket)
    collector = _Collector(pgconn, loop.create_future())
    collector.take()
    if collector.done.done():
        return collector.done.result()
    loop.add_reader(socket, collector.take)
    try:
        return await collector.done
    finally:
        loop.remove_reader(socket)


class _Collector:
    """The results of a pipeline as they come, up to its Sync: ``take`` consumes what the
    socket holds and ends ``done`` with the results once the Sync is there (or with the
    error that reading raised)."""

    __slots__ = ("done", "pgconn", "results")

    def __init__(self, pgconn: pq.abc.PGconn, done: asyncio.Future[list[pq.abc.PGresult]]) -> None:
        self.pgconn = pgconn
        self.done = done
        self.results: list[pq.abc.PGresult] = []

    def take(self) -> None:
        if self.done.done():
            return
        pgconn = self.pgconn
        try:
            pgconn.consume_input()
            while not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    # The end of one command's results.
                    continue
                if result.status == pq.ExecStatus.PIPELINE_SYNC:
                    self.done.set_result(self.results)
                    return
                self.results.append(result)
        except Exception as error:
            self.done.set_exception(error)


async def _writable(loop: asyncio.AbstractEventLoop, socket: int) -> None:
    """Until ``socket`` is ready for writing."""
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_writer(socket, wake)
    try:
        await ready
    finally:
        loop.remove_writer(socket)
