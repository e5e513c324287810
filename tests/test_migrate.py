"""Migrations run forwards and back on the suite's database kind (SQLite or PostgreSQL)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import select

from signoff import clock
from signoff.database import create_engine, create_sessionmaker
from signoff.events import auditlog
from signoff.evidence.verify import entry_hash
from signoff.migrate import alembic_config, migrate
from signoff.models import (
    Actor,
    Approval,
    ApprovalMode,
    IdempotencyRecord,
    Proposal,
    ProposalState,
    Role,
    Target,
)
from signoff.models.base import UTCDateTime
from tests.conftest import fresh_database

VERSIONED = ("proposals", "human_tasks", "incidents")


@pytest.fixture
async def scratch_engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    """An engine on a new, empty database of its own."""
    with fresh_database(tmp_path) as url:
        engine = create_engine(url)
        yield engine
        await engine.dispose()


async def _downgrade(engine: AsyncEngine, revision: str) -> None:
    def run(sync_connection: Any) -> None:
        config = alembic_config()
        config.attributes["connection"] = sync_connection
        command.downgrade(config, revision)

    async with engine.connect() as conn:
        await conn.run_sync(run)
        await conn.commit()


async def _version_columns(engine: AsyncEngine) -> dict[str, bool]:
    """Which tables have their version column."""
    tables = {**dict.fromkeys(VERSIONED, "version"), "change_events": "entity_version"}
    async with engine.connect() as conn:
        found = await conn.run_sync(lambda c: {t: sa.inspect(c).get_columns(t) for t in tables})
    return {t: any(col["name"] == tables[t] for col in found[t]) for t in tables}


INCIDENT = """
INSERT INTO incidents (id, fingerprint, kind, severity, state, title, entity_type, entity_id,
                       occurrence_count, first_seen_at, last_seen_at)
VALUES ('i-1', 'f-1', 'test', 'LOW', 'OPEN', 'old', 'proposal', 'p-1', 1,
        CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)
"""


async def test_entity_versions_upgrade_existing_rows_and_downgrade(
    scratch_engine: AsyncEngine,
) -> None:
    await migrate(scratch_engine, "0003")
    async with scratch_engine.begin() as conn:
        await conn.execute(sa.text(INCIDENT))
    await migrate(scratch_engine)
    async with scratch_engine.connect() as conn:
        version = (await conn.execute(sa.text("SELECT version FROM incidents"))).scalar_one()
    assert version == 1  # rows from before start at 1
    assert all((await _version_columns(scratch_engine)).values())

    await _downgrade(scratch_engine, "0003")
    assert not any((await _version_columns(scratch_engine)).values())
    await migrate(scratch_engine)
    assert all((await _version_columns(scratch_engine)).values())


async def _one_proposal(engine: AsyncEngine) -> Proposal:
    """An auto-approved proposal at its third delivery attempt, written without resolvers."""
    sessionmaker = create_sessionmaker(engine)
    async with sessionmaker() as session:
        agent = Actor(name="agent", role=Role.AGENT)
        session.add(agent)
        await session.flush()
        target = Target(
            name="t",
            url="http://127.0.0.1:9/",
            approval_mode=ApprovalMode.BOUNDED_AUTO,
            signing_secret="sealed:v1:x",
            created_by_id=agent.id,
        )
        session.add(target)
        await session.flush()
        proposal = Proposal(
            target_id=target.id,
            proposed_by_id=agent.id,
            action_code="refund.create",
            payload_digest="sha256:p",
            request_digest="sha256:r",
            operation_key="refund-42",
            state=ProposalState.FAILED,
            delivery_attempt_count=3,
            expires_at=clock.now(),
        )
        session.add(proposal)
        await session.commit()
    return proposal


async def test_operation_keys_and_lease_generations_carry_over(
    scratch_engine: AsyncEngine,
) -> None:
    """0006 records each existing proposal's operation key as an idempotency key with its
    request digest, and starts its lease generation at its attempt count."""
    await migrate(scratch_engine)
    proposal = await _one_proposal(scratch_engine)
    await _downgrade(scratch_engine, "0005")
    await migrate(scratch_engine)
    async with create_sessionmaker(scratch_engine)() as session:
        record = (await session.exec(select(IdempotencyRecord))).one()
        row = await session.get(Proposal, proposal.id)
    assert row is not None and row.delivery_lease == 3
    assert (record.operation, record.key, record.actor_id) == (
        "proposeAction",
        "refund-42",
        proposal.proposed_by_id,
    )
    assert (record.request_digest, record.result) == ("sha256:r", {"proposal_id": proposal.id})


async def _tables(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        return set(await conn.run_sync(lambda c: sa.inspect(c).get_table_names()))


async def test_key_checks_upgrade_and_downgrade(scratch_engine: AsyncEngine) -> None:
    await migrate(scratch_engine)
    assert "key_checks" in await _tables(scratch_engine)
    await _downgrade(scratch_engine, "0004")
    assert "key_checks" not in await _tables(scratch_engine)
    await migrate(scratch_engine)
    assert "key_checks" in await _tables(scratch_engine)


async def _proposal_indexes(engine: AsyncEngine) -> set[str]:
    async with engine.connect() as conn:
        found = await conn.run_sync(lambda c: sa.inspect(c).get_indexes("proposals"))
    return {index["name"] for index in found if index["name"]}


async def test_statistics_indexes_upgrade_and_downgrade(scratch_engine: AsyncEngine) -> None:
    wanted = {"ix_proposals_decided", "ix_proposals_applied"}
    await migrate(scratch_engine)
    assert wanted <= await _proposal_indexes(scratch_engine)
    await _downgrade(scratch_engine, "0024_oidc_email")
    assert not wanted & await _proposal_indexes(scratch_engine)
    await migrate(scratch_engine)
    assert wanted <= await _proposal_indexes(scratch_engine)


APPROVAL = """
INSERT INTO approvals (id, proposal_id, approver_id, decision, payload_digest, created_at)
VALUES ('a-1', :proposal, :approver, 'APPROVED', 'sha256:p', CURRENT_TIMESTAMP)
"""


async def test_amendments_and_policies_upgrade_existing_rows_and_downgrade(
    scratch_engine: AsyncEngine,
) -> None:
    """Approvals and proposals from before amendments are of revision 1; going back drops
    the revisions table and restores one decision per reviewer."""
    await migrate(scratch_engine)
    proposal = await _one_proposal(scratch_engine)
    await _downgrade(scratch_engine, "0009")
    assert "proposal_revisions" not in await _tables(scratch_engine)
    async with scratch_engine.begin() as conn:
        await conn.execute(
            sa.text(APPROVAL), {"proposal": proposal.id, "approver": proposal.proposed_by_id}
        )
    await migrate(scratch_engine)
    assert "proposal_revisions" in await _tables(scratch_engine)
    async with create_sessionmaker(scratch_engine)() as session:
        row = await session.get(Proposal, proposal.id)
        target = await session.get(Target, row.target_id) if row else None
        approval = (await session.exec(select(Approval))).one()
    assert row is not None and row.revision == 1 and row.awaiting_proposer is False
    assert row.policy_rule is None
    assert target is not None and target.amendable and not target.amendments_need_proposer
    assert approval.revision == 1


AUDIT_RECORD = """
INSERT INTO audit_events (id, action, actor_id, target_type, target_id, details, created_at)
VALUES (:id, 'test.done', NULL, 'test', 't-1', :details, :at)
"""


async def test_the_audit_log_is_built_over_existing_records_in_their_order(
    scratch_engine: AsyncEngine,
) -> None:
    """Records from before the log get positions in the order they were written, and leaf
    hashes the verifier recomputes; nothing else of a record changes."""
    await migrate(scratch_engine)
    await _downgrade(scratch_engine, "0014_channel_switches")
    base = clock.now()
    written = [("r-b", 2), ("r-a", 1), ("r-c", 3)]
    async with scratch_engine.begin() as conn:
        for record_id, minutes in written:
            moment = base + timedelta(minutes=minutes)
            await conn.execute(
                sa.text(AUDIT_RECORD).bindparams(
                    sa.bindparam("at", type_=UTCDateTime()),
                    sa.bindparam("details", type_=sa.JSON().with_variant(JSONB(), "postgresql")),
                ),
                {"id": record_id, "details": {"n": minutes, "text": "é"}, "at": moment},
            )
    await migrate(scratch_engine)
    async with create_sessionmaker(scratch_engine)() as session:
        log = [row async for row in auditlog.entries(session)]
        size = await auditlog.log_size(session)
    assert [entry["id"] for entry, _ in log] == ["r-a", "r-b", "r-c"]
    assert [entry["position"] for entry, _ in log] == [0, 1, 2]
    assert [entry["details"] for entry, _ in log] == [{"n": n, "text": "é"} for n in (1, 2, 3)]
    assert all(leaf == entry_hash(entry).hex() for entry, leaf in log)
    assert size == 3
    await _downgrade(scratch_engine, "0014_channel_switches")
    assert "audit_checkpoints" not in await _tables(scratch_engine)


async def test_proposals_let_through_before_history_are_decided_when_proposed(
    scratch_engine: AsyncEngine,
) -> None:
    """0025: a proposal past approval without a decidedAt gets its creation time; one
    still waiting for approval keeps none."""
    await migrate(scratch_engine)
    passed = await _one_proposal(scratch_engine)
    async with create_sessionmaker(scratch_engine)() as session:
        waiting = Proposal(
            target_id=passed.target_id,
            proposed_by_id=passed.proposed_by_id,
            action_code="refund.create",
            payload_digest="sha256:w",
            request_digest="sha256:w",
            operation_key="refund-43",
            expires_at=clock.now(),
        )
        session.add(waiting)
        await session.commit()
    await _downgrade(scratch_engine, "0024_oidc_email")
    await migrate(scratch_engine)
    async with create_sessionmaker(scratch_engine)() as session:
        rows = {p.id: p for p in (await session.exec(select(Proposal))).all()}
    assert rows[passed.id].decided_at == rows[passed.id].created_at
    assert rows[waiting.id].decided_at is None
    await _downgrade(scratch_engine, "0024_oidc_email")
    async with scratch_engine.connect() as conn:
        indexes = await conn.run_sync(lambda c: sa.inspect(c).get_indexes("proposals"))
    assert "ix_proposals_decided" not in {index["name"] for index in indexes}
