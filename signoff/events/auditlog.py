"""The verifiable audit log in the database: positions, leaves, the tree and its checkpoints.

The feed's sequencer gives each committed audit record the next position in the run that
stamps change-event cursors, under the same lock, so positions follow commit order and
are dense; the leaf is the canonical JSON of the record with its position. The tree
(``signoff.evidence.verify``) is rebuilt from the leaves a process has not read yet
(docs/design.md section 15).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.evidence.audit_key import Signer
from signoff.evidence.verify import (
    EXPORT_FORMAT,
    MerkleTree,
    canonical_json,
    checkpoint_note,
    entry_hash,
    record_line,
)
from signoff.models import AuditCheckpoint, AuditEvent, ChangeFeedState
from signoff.models.arrays import array_parameter
from signoff.models.records import table_of

AUDIT = table_of(AuditEvent)
CHECKPOINTS = table_of(AuditCheckpoint)
STATE = table_of(ChangeFeedState)
STATE_ID = 1
# Records a stamping run gives positions to at most; the upkeep's next run takes the rest.
STAMP_LIMIT = 5000

_ENTRY_COLUMNS = (
    AUDIT.c.id,
    AUDIT.c.action,
    AUDIT.c.actor_id,
    AUDIT.c.target_type,
    AUDIT.c.target_id,
    AUDIT.c.details,
    AUDIT.c.created_at,
)
# In the order of the partial index of unstamped records (``ix_audit_unstamped``), which
# planners then take even with statistics from before the log's records were stamped.
ANY_PENDING = (
    sa.select(AUDIT.c.id)
    .where(AUDIT.c.position.is_(None))
    .order_by(AUDIT.c.created_at, AUDIT.c.id)
    .limit(1)
)
PENDING = (
    sa.select(*_ENTRY_COLUMNS)
    .where(AUDIT.c.position.is_(None))
    .order_by(AUDIT.c.created_at, AUDIT.c.id)
    .limit(STAMP_LIMIT)
)


def timestamp(moment: datetime) -> str:
    """The one text form of a time in the log: ISO 8601, UTC, microseconds, ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def entry(position: int, row: Any) -> dict[str, Any]:
    """The log's entry for an audit record (a row with the record's columns)."""
    return {
        "position": position,
        "id": row.id,
        "action": row.action,
        "actorId": row.actor_id,
        "targetType": row.target_type,
        "targetId": row.target_id,
        "details": row.details,
        "createdAt": timestamp(row.created_at),
    }


@dataclass(frozen=True)
class Positioned:
    """Positions and leaf hashes given to pending audit records, for the caller to write
    in its stamping transaction: ``POSITION_ARRAYS`` on PostgreSQL, ``POSITION_EACH``
    elsewhere (one statement of a fixed shape either way, compiled once)."""

    ids: list[str]
    positions: list[int]
    leaves: list[str]

    def arrays(self) -> dict[str, Any]:
        return {
            "audit_ids": self.ids,
            "audit_positions": self.positions,
            "audit_leaves": self.leaves,
        }

    def each(self) -> list[dict[str, Any]]:
        return [
            {"b_id": id_, "b_position": position, "b_leaf": leaf}
            for id_, position, leaf in zip(self.ids, self.positions, self.leaves, strict=True)
        ]


_POSITIONS = (
    sa.func.unnest(
        array_parameter("audit_ids", sa.String()),
        array_parameter("audit_positions", sa.BigInteger()),
        array_parameter("audit_leaves", sa.String()),
    )
    .table_valued("id", "position", "leaf_hash")
    .render_derived(name="positioned_rows")
)
# The positions as arrays, one row each by ``unnest``: the statement's text and its
# parameters' number do not change with the batch (a CASE per batch was compiled anew).
POSITION_ARRAYS = (
    sa.update(AUDIT)
    .where(AUDIT.c.id == _POSITIONS.c.id)
    .values(position=_POSITIONS.c.position, leaf_hash=_POSITIONS.c.leaf_hash)
)
POSITION_EACH = (
    sa.update(AUDIT)
    .where(AUDIT.c.id == sa.bindparam("b_id"))
    .values(position=sa.bindparam("b_position"), leaf_hash=sa.bindparam("b_leaf"))
)


async def positions(connection: AsyncConnection, size: int) -> tuple[int, Positioned | None]:
    """Positions from ``size`` on for the pending audit records, in the caller's stamping
    transaction (which holds the feed state's lock): the log's new size, and the positions
    (``None``: nothing pending), which the caller writes with its cursors (one round trip
    on PostgreSQL) and whose new size it records in the feed's state."""
    rows = (await connection.execute(PENDING)).all()
    if not rows:
        return size, None
    places = list(range(size, size + len(rows)))
    leaves = [entry_hash(entry(place, row)).hex() for place, row in zip(places, rows, strict=True)]
    return size + len(rows), Positioned([row.id for row in rows], places, leaves)


async def log_size(session: AsyncSession) -> int:
    """How many audit records have a position."""
    connection = await session.connection()
    found = (
        await connection.execute(sa.select(STATE.c.audit_size).where(STATE.c.id == STATE_ID))
    ).scalar_one_or_none()
    return int(found or 0)


class LeafCache:
    """This process's copy of the log's leaf hashes, as a tree: positions never change once
    stamped, so each call reads only the leaves past the ones it holds."""

    def __init__(self) -> None:
        self.tree = MerkleTree()

    async def tree_of(self, session: AsyncSession, size: int) -> MerkleTree:
        """The tree holding at least the first ``size`` leaves."""
        if self.tree.size < size:
            connection = await session.connection()
            # Not a server-side cursor: read sessions on PostgreSQL may run outside a
            # transaction block, where one cannot be opened.
            result = await connection.execute(
                sa.select(AUDIT.c.position, AUDIT.c.leaf_hash)
                .where(AUDIT.c.position >= self.tree.size, AUDIT.c.position < size)
                .order_by(AUDIT.c.position)
            )
            for position, leaf in result:
                if position != self.tree.size or leaf is None:
                    raise LogDamaged(self.tree.size)
                self.tree.append(bytes.fromhex(leaf))
            if self.tree.size < size:
                raise LogDamaged(self.tree.size)
        return self.tree

    async def still_holds(self, session: AsyncSession) -> bool:
        """Whether the stored log still ends, at this copy's last leaf, as it was read."""
        if self.tree.size == 0:
            return True
        connection = await session.connection()
        stored = (
            await connection.execute(
                sa.select(AUDIT.c.leaf_hash).where(AUDIT.c.position == self.tree.size - 1)
            )
        ).scalar_one_or_none()
        return stored == self.tree.leaf(self.tree.size - 1).hex()

    def forget(self) -> None:
        self.tree = MerkleTree()


class LogDamaged(Exception):
    """The stored log has a hole, a repeat or a record without its leaf at ``position``,
    or no longer gives the checkpoint of ``position`` records."""

    def __init__(self, position: int) -> None:
        super().__init__(f"the audit log is damaged at position {position}")
        self.position = position


async def latest_checkpoint(session: AsyncSession) -> AuditCheckpoint | None:
    connection = await session.connection()
    row = (
        await connection.execute(
            sa.select(CHECKPOINTS).order_by(CHECKPOINTS.c.size.desc()).limit(1)
        )
    ).first()
    return None if row is None else AuditCheckpoint.model_validate(row._mapping)


async def checkpoints(
    session: AsyncSession, *, since: int = 0, through: int | None = None
) -> list[AuditCheckpoint]:
    """Checkpoints of sizes from ``since`` to ``through``, smallest first."""
    stmt = sa.select(CHECKPOINTS).where(CHECKPOINTS.c.size >= since)
    if through is not None:
        stmt = stmt.where(CHECKPOINTS.c.size <= through)
    connection = await session.connection()
    rows = await connection.execute(stmt.order_by(CHECKPOINTS.c.size))
    return [AuditCheckpoint.model_validate(row._mapping) for row in rows]


def as_document(checkpoint: AuditCheckpoint) -> dict[str, Any]:
    """A checkpoint as the verifier reads it."""
    return {
        "size": checkpoint.size,
        "root": checkpoint.root,
        "issuedAt": checkpoint.issued_at,
        "keyId": checkpoint.key_id,
        "signature": checkpoint.signature,
        "previousSize": checkpoint.previous_size,
        "consistency": list(checkpoint.consistency),
    }


async def due(
    session: AsyncSession, *, every_records: int, every_seconds: float
) -> tuple[int, AuditCheckpoint | None] | None:
    """The log's size and latest checkpoint when a new checkpoint is due: ``every_records``
    records or ``every_seconds`` since the last, and the log grew."""
    size = await log_size(session)
    last = await latest_checkpoint(session)
    covered = 0 if last is None else last.size
    if size <= covered:
        return None
    if size - covered >= every_records:
        return size, last
    # The time since the last checkpoint, or since the first record.
    if last is not None:
        since = datetime.fromisoformat(last.issued_at)
    else:
        connection = await session.connection()
        first = (
            await connection.execute(sa.select(AUDIT.c.created_at).where(AUDIT.c.position == 0))
        ).scalar_one_or_none()
        if first is None:
            return None
        since = first
    if (clock.now() - since).total_seconds() < every_seconds:
        return None
    return size, last


async def sign_checkpoint(
    session: AsyncSession,
    signer: Signer,
    cache: LeafCache,
    size: int,
    last: AuditCheckpoint | None,
) -> AuditCheckpoint:
    """Sign a checkpoint of the log's first ``size`` records, with the proof that it extends
    ``last`` (``LogDamaged`` if it does not). Two processes may race: the size is the key,
    the later insert does nothing."""
    if not await cache.still_holds(session):
        cache.forget()  # the stored log changed under this copy: read it again
    tree = await cache.tree_of(session, size)
    if last is not None and tree.root(last.size).hex() != last.root:
        # Never sign a log that does not extend the last checkpoint: reconciliation
        # reports where they part (a CRITICAL incident).
        raise LogDamaged(last.size)
    root = tree.root(size)
    issued_at = timestamp(clock.now())
    previous = None if last is None else last.size
    proof = [] if previous is None else [h.hex() for h in tree.consistency_proof(previous, size)]
    values: dict[str, Any] = {
        "size": size,
        "root": root.hex(),
        "issued_at": issued_at,
        "signature": base64.b64encode(signer.sign(checkpoint_note(size, root, issued_at))).decode(),
        "key_id": signer.key_id,
        "previous_size": previous,
        "consistency": proof,
    }
    connection = await session.connection()
    insert = pg_insert if connection.dialect.name == "postgresql" else sqlite_insert
    await connection.execute(
        insert(CHECKPOINTS).values(**values).on_conflict_do_nothing(index_elements=["size"])
    )
    return AuditCheckpoint(**values)


class Checkpointer:
    """Signs checkpoints when due, from the upkeep of every process that runs the feed; the
    key is loaded at the first one (the process's start has checked it already)."""

    def __init__(
        self, load_signer: Callable[[], Signer], *, every_records: int, every_seconds: float
    ) -> None:
        self._load_signer = load_signer
        self._signer: Signer | None = None
        self.every_records = every_records
        self.every_seconds = every_seconds
        self.cache = LeafCache()

    @property
    def signer(self) -> Signer:
        if self._signer is None:
            self._signer = self._load_signer()
        return self._signer

    async def is_due(self, session: AsyncSession) -> bool:
        """Whether ``run`` would sign a checkpoint now (without ``force``)."""
        found = await due(
            session, every_records=self.every_records, every_seconds=self.every_seconds
        )
        return found is not None

    async def run(self, session: AsyncSession, *, force: bool = False) -> AuditCheckpoint | None:
        """Sign a checkpoint if one is due (``force``: whenever the log grew); the caller
        commits."""
        every_records, every_seconds = (
            (1, 0.0)
            if force
            else (
                self.every_records,
                self.every_seconds,
            )
        )
        found = await due(session, every_records=every_records, every_seconds=every_seconds)
        if found is None:
            return None
        size, last = found
        return await sign_checkpoint(session, self.signer, self.cache, size, last)


async def entries(
    session: AsyncSession, *, since: int = 0, through: int | None = None, chunk: int = 5000
) -> AsyncGenerator[tuple[dict[str, Any], str | None], None]:
    """The log's entries from position ``since``, with their stored leaf hashes, in
    position order (an async iterator of ``(entry, leaf_hash)``; a reader that may stop
    early closes it, with ``contextlib.aclosing``)."""
    connection = await session.connection()
    stmt = sa.select(*_ENTRY_COLUMNS, AUDIT.c.position, AUDIT.c.leaf_hash).where(
        AUDIT.c.position >= since
    )
    if through is not None:
        stmt = stmt.where(AUDIT.c.position < through)
    result = await connection.stream(
        stmt.order_by(AUDIT.c.position).execution_options(yield_per=chunk)
    )
    try:
        async for row in result:
            yield entry(row.position, row), row.leaf_hash
    finally:  # a reader that stops early leaves no server-side cursor open
        await result.close()


async def records_of(session: AsyncSession, ids: Sequence[str]) -> list[Mapping[str, Any]]:
    """The entries of the audit records ``ids`` (those with a position), by position."""
    if not ids:
        return []
    connection = await session.connection()
    rows = await connection.execute(
        sa.select(*_ENTRY_COLUMNS, AUDIT.c.position, AUDIT.c.leaf_hash)
        .where(AUDIT.c.id.in_(ids), AUDIT.c.position.is_not(None))
        .order_by(AUDIT.c.position)
    )
    return [{"entry": entry(row.position, row), "leafHash": row.leaf_hash} for row in rows]


async def export_lines(
    session: AsyncSession, cache: LeafCache, since: int = 0
) -> AsyncIterator[str]:
    """The log as ``signoff audit export`` writes it, one JSON document a line: a header,
    then each record, each checkpoint after the record that completes it. ``since`` is
    rounded down to a checkpoint's size, whose frontier the header carries, so the export
    is verified from there without the records before it."""
    start, anchor = 0, None
    if since > 0:
        earlier = await checkpoints(session, through=since)
        if earlier:
            anchor = earlier[-1]
            start = anchor.size
    frontier = [] if anchor is None else (await cache.tree_of(session, start)).frontier(start)
    header: dict[str, Any] = {
        "type": "header",
        "format": EXPORT_FORMAT,
        "since": start,
        "frontier": [h.hex() for h in frontier],
    }
    if anchor is not None:
        header["checkpoint"] = as_document(anchor)
    yield canonical_json(header)
    pending = [c for c in await checkpoints(session, since=start) if c.size > start]
    async for item, leaf in entries(session, since=start):
        yield (
            record_line(item, leaf)
            if leaf is not None
            else canonical_json({"type": "record", "entry": item, "leafHash": None})
        )
        while pending and pending[0].size <= item["position"] + 1:
            yield canonical_json({"type": "checkpoint", **as_document(pending.pop(0))})
    for checkpoint in pending:
        yield canonical_json({"type": "checkpoint", **as_document(checkpoint)})
