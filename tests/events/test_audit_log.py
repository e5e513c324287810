"""The verifiable audit log: positions in commit order, dense, stamped by the feed's
sequencer, each leaf the canonical JSON of its record with its position."""

from __future__ import annotations

import asyncio
import os
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from httpx import ASGITransport, AsyncClient

from signoff.config import Settings
from signoff.database import SessionMaker
from signoff.events import auditlog, feed
from signoff.evidence.audit_key import signer_of
from signoff.evidence.sealing import decode_key
from signoff.evidence.verify import (
    entry_hash,
    load_public_key,
    verify_checkpoint,
    verify_consistency,
    verify_inclusion,
)
from signoff.models import AuditEvent, ChangeEvent
from signoff.resolvers.core.audit import audit_tree
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.web.app import create_app
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient, build_world

SIGNER = signer_of(decode_key(os.environ["SIGNOFF_AUDIT_SIGNING_KEY"]))
KEY = load_public_key(SIGNER.public_key)


async def _log(sessionmaker: SessionMaker) -> list[tuple[dict[str, Any], str | None]]:
    async with sessionmaker() as session:
        rows = [row async for row in auditlog.entries(session)]
        await session.commit()
    return rows


async def _unstamped(sessionmaker: SessionMaker) -> int:
    async with sessionmaker() as session:
        count = (
            await session.exec(
                sa.select(sa.func.count())
                .where(sa.column("position").is_(None))
                .select_from(AuditEvent)
            )
        ).one()
        await session.commit()
    return int(count[0])


async def _stamped_everything(sessionmaker: SessionMaker) -> None:
    """Wait for the sequencer (PostgreSQL: after commit, in its own transaction)."""
    for _ in range(200):
        if await _unstamped(sessionmaker) == 0:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("audit records were left without a position")


def _assert_dense_and_sound(log: list[tuple[dict[str, Any], str | None]]) -> None:
    assert [entry["position"] for entry, _ in log] == list(range(len(log)))
    for entry, leaf in log:
        assert leaf == entry_hash(entry).hex()


async def test_every_record_of_the_api_gets_the_next_position(
    gql: GraphQLClient, sessionmaker: SessionMaker
) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    await _stamped_everything(sessionmaker)
    log = await _log(sessionmaker)
    actions = [entry["action"] for entry, _ in log]
    assert "proposal.proposed" in actions and "approval.approved" in actions
    _assert_dense_and_sound(log)
    async with sessionmaker() as session:
        assert await auditlog.log_size(session) == len(log)
        await session.commit()


async def _write(sessionmaker: SessionMaker, writer: int, step: int) -> None:
    """One transaction of two audit records, through the transition core, then a stamping
    round of its own, as an after-commit kick would run it."""
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        for index in range(2):
            record(
                work,
                Happening(
                    entity_type="test",
                    entity_id=f"w{writer}",
                    actor_id=None,
                    action="test.written",
                    details={"writer": writer, "step": step, "index": index},
                ),
            )
        await asyncio.sleep(random.random() / 100)
        await work.commit()
    async with sessionmaker() as session:
        await feed.stamp_pending(session)
        await session.commit()


@requires_postgres
async def test_fifty_concurrent_writers_get_dense_positions_in_commit_order(
    sessionmaker: SessionMaker,
) -> None:
    """Fifty writers, each committing four transactions one after another, while every
    commit runs a stamping round and checkpoints are signed meanwhile: no hole, no repeat,
    a transaction that committed before another began always has the lower positions (its
    own records in order), every record's inclusion proof verifies against the latest
    checkpoint, and consistency proofs between every pair of checkpoints verify."""
    steps = 4
    checkpointer = auditlog.Checkpointer(lambda: SIGNER, every_records=1, every_seconds=0)
    writing = True

    async def writer(number: int) -> None:
        for step in range(steps):
            await _write(sessionmaker, number, step)

    async def sign_meanwhile() -> None:
        while writing:
            async with sessionmaker() as session:
                await checkpointer.run(session, force=True)
                await session.commit()
            await asyncio.sleep(0.01)

    signing = asyncio.create_task(sign_meanwhile())
    try:
        await asyncio.gather(*(writer(n) for n in range(50)))
    finally:
        writing = False
        await signing
    async with sessionmaker() as session:
        await checkpointer.run(session, force=True)
        await session.commit()
    log = await _log(sessionmaker)
    assert len(log) == 50 * steps * 2
    _assert_dense_and_sound(log)
    places: dict[tuple[int, int, int], int] = {}
    for entry, _ in log:
        details = entry["details"]
        places[(details["writer"], details["step"], details["index"])] = entry["position"]
    for number in range(50):
        order = [places[(number, step, index)] for step in range(steps) for index in range(2)]
        assert order == sorted(order), f"writer {number}'s commits out of order: {order}"
    async with sessionmaker() as session:
        signed = await auditlog.checkpoints(session)
        tree = await audit_tree(session, len(log))
        await session.commit()
    assert len(signed) > 2 and signed[-1].size == len(log)
    assert all(verify_checkpoint(auditlog.as_document(c), KEY) for c in signed)
    latest = bytes.fromhex(signed[-1].root)
    for entry, _ in log:
        proof = tree.inclusion_proof(entry["position"], len(log))
        assert verify_inclusion(entry["position"], len(log), entry_hash(entry), proof, latest)
    for older in signed:
        for newer in signed:
            if older.size <= newer.size:
                proof = tree.consistency_proof(older.size, newer.size)
                assert verify_consistency(
                    older.size,
                    newer.size,
                    bytes.fromhex(older.root),
                    bytes.fromhex(newer.root),
                    proof,
                )


async def _unstamped_events(sessionmaker: SessionMaker) -> int:
    async with sessionmaker() as session:
        count = (
            await session.exec(
                sa.select(sa.func.count())
                .where(sa.column("cursor").is_(None))
                .select_from(ChangeEvent)
            )
        ).one()
        await session.commit()
    return int(count[0])


async def test_with_the_log_off_records_wait_for_a_process_with_it_on(
    settings: Settings, sessionmaker: SessionMaker, caplog: pytest.LogCaptureFixture
) -> None:
    """``SIGNOFF_AUDIT_LOG=0``: the change feed goes on and the audit records are written,
    but none gets a position; a process with the log on stamps them, densely and soundly."""
    off = create_app(replace(settings, audit_log=False))
    async with off.router.lifespan_context(off):
        async with AsyncClient(transport=ASGITransport(app=off), base_url="http://s.test") as c:
            world = await build_world(GraphQLClient(c, sessionmaker))
            proposal = (await world.propose())["proposal"]
            await world.decide(world.reviewers[0], proposal)
        for _ in range(200):
            if await _unstamped_events(sessionmaker) == 0:
                break
            await asyncio.sleep(0.02)
        assert await _unstamped_events(sessionmaker) == 0
        written = await _unstamped(sessionmaker)
        assert written > 0 and await _log(sessionmaker) == []
    assert "the audit log is off (SIGNOFF_AUDIT_LOG=0)" in caplog.text
    on = create_app(settings)
    async with on.router.lifespan_context(on):
        await _stamped_everything(sessionmaker)
    log = await _log(sessionmaker)
    assert len(log) == written
    assert {"proposal.proposed", "approval.approved"} <= {entry["action"] for entry, _ in log}
    _assert_dense_and_sound(log)


async def test_the_look_for_unstamped_records_reads_only_those(
    sessionmaker: SessionMaker,
) -> None:
    """The sequencer looks for records without a position at every round: the look goes
    through an index of those, not through the stamped log before them, even where the
    planner's statistics are from before they were stamped (PostgreSQL went through every
    record in ``created_at`` order then, before the partial index)."""
    written = [
        {
            "id": f"s{i:06d}",
            "action": "test.written",
            "target_type": "test",
            "target_id": "t",
            "details": {},
            "created_at": datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i),
        }
        # More than a stamping run takes: a log where reading it whole costs more than the
        # look's LIMIT, as in any deployment that has run for a while.
        for i in range(3 * auditlog.STAMP_LIMIT)
    ]
    async with sessionmaker() as session:
        await session.exec(sa.insert(AuditEvent), params=written)  # type: ignore[call-overload]
        await (await session.connection()).execute(sa.text("ANALYZE audit_events"))
        await session.commit()
    async with sessionmaker() as session:  # stamped at once: only the plans matter here
        await session.exec(  # type: ignore[call-overload]
            sa.update(AuditEvent).values(
                position=sa.cast(sa.func.substr(AuditEvent.id, 2), sa.Integer),
                leaf_hash="0" * 64,
            )
        )
        await session.commit()
    assert await _unstamped(sessionmaker) == 0
    async with sessionmaker() as session:
        connection = await session.connection()
        dialect = connection.dialect
        explain = "EXPLAIN" if dialect.name == "postgresql" else "EXPLAIN QUERY PLAN"
        for look in (auditlog.PENDING, auditlog.ANY_PENDING):
            sql = look.compile(dialect=dialect, compile_kwargs={"literal_binds": True})
            plan = "\n".join(
                " ".join(str(v) for v in row)
                for row in await connection.execute(sa.text(f"{explain} {sql}"))
            )
            # SQLite may search the unique index of positions for NULL: as few rows read.
            assert "ix_audit_unstamped" in plan or "INDEX ix_audit_position (position=?)" in plan
            assert "Seq Scan" not in plan and "ix_audit_created" not in plan, plan
        await session.commit()
