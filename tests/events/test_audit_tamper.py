"""Tampering with the stored audit log is caught by the offline verifier, which names the
first position that does not verify.

Each tamper runs on the test's database in a transaction that is rolled back afterwards:
the export is read in that transaction, so each case sees the untouched log plus its own
change, as a copy of the database would.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.database import SessionMaker
from signoff.events import auditlog, feed
from signoff.evidence import verify
from signoff.evidence.audit_key import signer_of
from signoff.evidence.sealing import decode_key, new_key_text
from signoff.evidence.verify import Verdict, entry_hash
from signoff.models import Incident
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from signoff.resolvers.delivery.reconciliation import reconcile

SIGNER = signer_of(decode_key(os.environ["SIGNOFF_AUDIT_SIGNING_KEY"]))
KEY = verify.load_public_key(SIGNER.public_key)
AUDIT = auditlog.AUDIT
CHECKPOINTS = auditlog.CHECKPOINTS
RECORDS = 35


async def _write(sessionmaker: SessionMaker, count: int, start: int) -> None:
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        for number in range(start, start + count):
            record(
                work,
                Happening(
                    entity_type="proposal",
                    entity_id="p-1",
                    actor_id=None,
                    action="approval.approved",
                    details={"number": number, "payload_digest": "sha256:ab", "note": "ok"},
                ),
            )
        await work.commit()
    async with sessionmaker() as session:
        await feed.stamp_pending(session)
        await session.commit()


@pytest.fixture
async def log(sessionmaker: SessionMaker) -> AsyncIterator[SessionMaker]:
    """A log of 35 records with checkpoints at 10, 20 and 30."""
    checkpointer = auditlog.Checkpointer(lambda: SIGNER, every_records=1, every_seconds=0)
    for start in (0, 10, 20):
        await _write(sessionmaker, 10, start)
        async with sessionmaker() as session:
            assert await checkpointer.run(session, force=True) is not None
            await session.commit()
    await _write(sessionmaker, RECORDS - 30, 30)
    yield sessionmaker


async def _export(session: AsyncSession, since: int = 0) -> list[str]:
    return [line async for line in auditlog.export_lines(session, auditlog.LeafCache(), since)]


async def _verdict(session: AsyncSession, **kept: Any) -> Verdict:
    return verify.verify_export(await _export(session), KEY, **kept)


async def _checkpoint_documents(session: AsyncSession) -> list[dict[str, Any]]:
    return [auditlog.as_document(c) for c in await auditlog.checkpoints(session)]


async def test_the_untouched_export_verifies(log: SessionMaker) -> None:
    async with log() as session:
        verdict = await _verdict(session, kept=await _checkpoint_documents(session))
        since = verify.verify_export(await _export(session, since=25), KEY)
    assert verdict.ok, verdict.summary()
    assert (verdict.records, verdict.checkpoints, verdict.verified_through) == (RECORDS, 3, 30)
    assert verdict.notes == ["positions 30 to 34 are not yet covered by a signed checkpoint"]
    # From a later position: the header's frontier stands in for the records before it.
    assert since.ok and since.records == RECORDS - 20 and since.verified_through == 30


async def _tampered(log: SessionMaker, *statements: Any, **kept: Any) -> Verdict:
    async with log() as session:
        connection = await session.connection()
        for statement in statements:
            await connection.execute(statement)
        verdict = await _verdict(session, **kept)
        await session.rollback()
    assert not verdict.ok
    return verdict


def _at(position: int) -> Any:
    return AUDIT.c.position == position


async def test_one_byte_changed(log: SessionMaker) -> None:
    verdict = await _tampered(
        log, sa.update(AUDIT).where(_at(13)).values(action="approval.approvee")
    )
    assert verdict.position == 13, verdict.summary()
    assert "does not match its leaf hash" in (verdict.failure or "")


async def test_one_byte_changed_and_its_leaf_hash_recomputed(log: SessionMaker) -> None:
    """A careful forger recomputes the leaf: the checkpoint over it still fails, and the
    verifier names the first position it can no longer vouch for."""
    async with log() as session:
        rows = [entry async for entry, _ in auditlog.entries(session, since=13, through=14)]
        await session.commit()
    forged = {**rows[0], "action": "approval.approvee"}
    verdict = await _tampered(
        log,
        sa.update(AUDIT)
        .where(_at(13))
        .values(action="approval.approvee", leaf_hash=entry_hash(forged).hex()),
    )
    assert verdict.position == 10, verdict.summary()
    assert "do not give the checkpoint's root" in (verdict.failure or "")


async def test_one_deleted(log: SessionMaker) -> None:
    verdict = await _tampered(log, sa.delete(AUDIT).where(_at(17)))
    assert verdict.position == 17, verdict.summary()
    assert "missing" in (verdict.failure or "")


async def test_two_swapped(log: SessionMaker) -> None:
    verdict = await _tampered(
        log,
        sa.update(AUDIT).where(_at(5)).values(position=-1),
        sa.update(AUDIT).where(_at(8)).values(position=5),
        sa.update(AUDIT).where(_at(-1)).values(position=8),
    )
    assert verdict.position == 5, verdict.summary()


async def test_one_inserted(log: SessionMaker) -> None:
    shift = 1_000_000
    verdict = await _tampered(
        log,
        sa.update(AUDIT).where(AUDIT.c.position >= 22).values(position=AUDIT.c.position + shift),
        sa.update(AUDIT)
        .where(AUDIT.c.position >= shift)
        .values(position=AUDIT.c.position - shift + 1),
        sa.insert(AUDIT).values(
            id="forged",
            action="approval.approved",
            actor_id=None,
            target_type="proposal",
            target_id="p-1",
            details={},
            created_at=sa.func.current_timestamp(),
            position=22,
            leaf_hash="00" * 32,
        ),
    )
    assert verdict.position == 22, verdict.summary()


async def test_the_tail_truncated(log: SessionMaker) -> None:
    """Records cut off, checkpoints left: the stored checkpoint covers them."""
    verdict = await _tampered(log, sa.delete(AUDIT).where(AUDIT.c.position >= 26))
    assert verdict.position == 26, verdict.summary()
    assert "missing" in (verdict.failure or "")


async def test_the_tail_and_its_checkpoints_truncated(log: SessionMaker) -> None:
    """A careful forger drops the checkpoints too: the checkpoint the auditor kept from
    before still covers the lost records."""
    async with log() as session:
        kept = (await _checkpoint_documents(session))[-1]
        await session.commit()
    verdict = await _tampered(
        log,
        sa.delete(AUDIT).where(AUDIT.c.position >= 26),
        sa.delete(CHECKPOINTS).where(CHECKPOINTS.c.size > 26),
        kept=[kept],
    )
    assert verdict.position == 26, verdict.summary()


async def test_the_signing_key_replaced(log: SessionMaker) -> None:
    """Every checkpoint signed again with another key (after rewriting a record, say): none
    verifies with the public key the auditor kept, so nothing is vouched for."""
    other = signer_of(decode_key(new_key_text()))
    async with log() as session:
        documents = await _checkpoint_documents(session)
        await session.commit()
    resigned = [
        sa.update(CHECKPOINTS)
        .where(CHECKPOINTS.c.size == document["size"])
        .values(
            signature=verify.base64.b64encode(
                other.sign(
                    verify.checkpoint_note(
                        document["size"], bytes.fromhex(document["root"]), document["issuedAt"]
                    )
                )
            ).decode(),
            key_id=other.key_id,
        )
        for document in documents
    ]
    verdict = await _tampered(log, *resigned)
    assert verdict.position == 0, verdict.summary()
    assert "not signed by this public key" in (verdict.failure or "")
    # With the forger's own key the forgery is consistent: only the key kept apart helps.
    async with log() as session:
        connection = await session.connection()
        for statement in resigned:
            await connection.execute(statement)
        forged = verify.verify_export(
            await _export(session), verify.load_public_key(other.public_key)
        )
        await session.rollback()
    assert forged.ok


async def _reconcile(log: SessionMaker) -> Any:
    done = await reconcile(WorkMaker(log))
    async with log() as session:
        incidents = (
            await session.exec(sa.select(Incident).where(Incident.kind == "audit_log_mismatch"))
        ).all()
        await session.commit()
    return done.audit_log, [row[0] for row in incidents]


async def test_reconciliation_finds_nothing_wrong_with_an_untouched_log(log: SessionMaker) -> None:
    found, incidents = await _reconcile(log)
    assert found is None and incidents == []


async def test_reconciliation_opens_a_critical_incident_when_the_tail_is_edited(
    log: SessionMaker,
) -> None:
    async with log() as session:
        await session.exec(sa.update(AUDIT).where(_at(24)).values(target_id="p-2"))
        await session.commit()
    found, incidents = await _reconcile(log)
    assert (found.checkpoint_size, found.position) == (30, 24)
    [incident] = incidents
    assert incident.severity == "CRITICAL" and incident.state == "OPEN"
    assert incident.title == "The audit log disagrees with its checkpoint of size 30 at position 24"
    # Found again at the next run: the same incident, still open, not another.
    again, incidents = await _reconcile(log)
    assert again == found and len(incidents) == 1


async def test_reconciliation_catches_a_rolled_back_log(log: SessionMaker) -> None:
    async with log() as session:
        await session.exec(sa.delete(AUDIT).where(AUDIT.c.position >= 12))
        await session.exec(sa.update(auditlog.STATE).values(audit_size=12))
        await session.commit()
    found, incidents = await _reconcile(log)
    assert (found.checkpoint_size, found.position) == (30, 12)
    assert [i.severity for i in incidents] == ["CRITICAL"]


async def test_no_checkpoint_is_signed_over_a_log_that_left_the_last_one(
    log: SessionMaker,
) -> None:
    async with log() as session:
        await session.exec(
            sa.update(AUDIT).where(_at(3)).values(leaf_hash="00" * 32, target_id="p-9")
        )
        await session.commit()
    checkpointer = auditlog.Checkpointer(lambda: SIGNER, every_records=1, every_seconds=0)
    async with log() as session:
        with pytest.raises(auditlog.LogDamaged):
            await checkpointer.run(session, force=True)
        await session.rollback()
