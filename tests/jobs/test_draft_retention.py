"""Draft retention: tombstones of what reached the executor are kept, values dropped;
what never reached it is deleted; old draft requests are forgotten; each run is bounded."""

from __future__ import annotations

import uuid
from datetime import timedelta

import sqlalchemy as sa
from sqlmodel import col, select

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import (
    Actor,
    AuditEvent,
    CancelReason,
    Draft,
    DraftOwner,
    DraftStatus,
    IdempotencyRecord,
    Role,
)
from signoff.resolvers.core.work import WorkMaker
from signoff.resolvers.drafts.retention import retain_drafts
from tests.schema.test_draft_reads import draft_row, seed

DAY = timedelta(days=1)


async def owner_of(sessionmaker: SessionMaker, draft: Draft, *, manual: bool = False) -> None:
    async with sessionmaker() as session:
        session.add(
            DraftOwner(
                owner_key=draft.owner_key,
                draft_id=draft.id,
                manual_submitted_at=clock.now() if manual else None,
            )
        )
        await session.commit()


async def test_tombstones_are_kept_and_values_dropped_after_retention(
    sessionmaker: SessionMaker, frozen_clock: clock.FrozenClock
) -> None:
    now = clock.now()
    expired = now - 30 * DAY - timedelta(seconds=1)
    dispatched = draft_row(
        "acct",
        status=DraftStatus.RESERVED,
        expires_at=expired,
        operation_key="op-1",
        reserved_digest="sha256:r",
        dispatched_at=expired - DAY,
        updated_by_user=["amount"],
    )
    observed = draft_row("acct", status=DraftStatus.OBSERVED, expires_at=expired, receipt={"a": 1})
    released = draft_row(
        "acct",
        status=DraftStatus.CANCELLED,
        cancel_reason=CancelReason.NOT_SUBMITTED,
        expires_at=expired,
        operation_key="op-2",
        dispatched_at=expired - DAY,
    )
    recent = draft_row("acct", status=DraftStatus.OBSERVED, expires_at=now - 29 * DAY)
    await seed(sessionmaker, dispatched, observed, released, recent)
    await owner_of(sessionmaker, dispatched)

    done = await retain_drafts(WorkMaker(sessionmaker))

    assert (done.values_dropped, done.drafts_deleted) == (3, 0)
    async with sessionmaker() as session:
        rows = {d.id: d for d in (await session.exec(select(Draft))).all()}
        null_values = set(
            (await session.exec(select(Draft.id).where(sa.column("values").is_(None)))).all()
        )
        owner = await session.get(DraftOwner, dispatched.owner_key)
    assert null_values == {dispatched.id, observed.id, released.id}  # SQL NULL, not JSON null
    kept = rows[dispatched.id]
    assert kept.values is None and kept.updated_by_user == []
    assert kept.values_dropped_at == now
    assert kept.revision == dispatched.revision + 1
    assert (kept.operation_key, kept.reserved_digest) == ("op-1", "sha256:r")
    assert kept.dispatched_at == dispatched.dispatched_at
    assert kept.owner_key == dispatched.owner_key and kept.status == DraftStatus.RESERVED
    assert rows[observed.id].receipt == {"a": 1}
    assert rows[recent.id].values == recent.values  # not yet due
    assert owner is not None and owner.draft_id == dispatched.id
    # Nothing more to do: a second run touches nothing.
    assert (await retain_drafts(WorkMaker(sessionmaker))).total == 0


async def test_drafts_that_never_reached_the_executor_are_deleted(
    sessionmaker: SessionMaker, frozen_clock: clock.FrozenClock
) -> None:
    now = clock.now()
    expired = now - 30 * DAY - timedelta(seconds=1)
    abandoned = draft_row("acct", expires_at=expired)
    reserved = draft_row("acct", status=DraftStatus.RESERVED, expires_at=expired, operation_key="k")
    superseded = draft_row(
        "acct",
        status=DraftStatus.CANCELLED,
        cancel_reason=CancelReason.SUPERSEDED,
        expires_at=expired,
    )
    successor = draft_row("acct")  # holds superseded's owner now
    successor.owner_key = superseded.owner_key
    manual = draft_row("acct", expires_at=expired)  # the ordinary form was submitted for it
    fresh = draft_row("acct", expires_at=now - 29 * DAY)
    await seed(sessionmaker, abandoned, reserved, superseded, successor, manual, fresh)
    await owner_of(sessionmaker, abandoned)
    await owner_of(sessionmaker, successor)
    await owner_of(sessionmaker, manual, manual=True)

    done = await retain_drafts(WorkMaker(sessionmaker))

    assert (done.values_dropped, done.drafts_deleted) == (0, 4)
    async with sessionmaker() as session:
        left = set((await session.exec(select(Draft.id))).all())
        owners = {o.owner_key: o for o in (await session.exec(select(DraftOwner))).all()}
        audited = set(
            (
                await session.exec(
                    select(AuditEvent.target_id).where(AuditEvent.action == "draft.deleted")
                )
            ).all()
        )
    assert left == {successor.id, fresh.id}
    assert abandoned.owner_key not in owners
    assert owners[successor.owner_key].draft_id == successor.id
    assert owners[manual.owner_key].draft_id is None  # the marker stays
    assert owners[manual.owner_key].manual_submitted_at is not None
    assert audited == {abandoned.id, reserved.id, superseded.id, manual.id}


async def test_old_draft_requests_are_forgotten(
    sessionmaker: SessionMaker, frozen_clock: clock.FrozenClock
) -> None:
    now = clock.now()
    async with sessionmaker() as session:
        actor = Actor(name=f"agent-{uuid.uuid4().hex[:6]}", role=Role.AGENT)
        session.add(actor)
        await session.flush()

        def request(operation: str, age: timedelta) -> IdempotencyRecord:
            return IdempotencyRecord(
                actor_id=actor.id,
                operation=operation,
                key=uuid.uuid4().hex,
                request_digest="sha256:x",
                created_at=now - age,
            )

        session.add_all(
            [
                request("draftPrepare", 7 * DAY + timedelta(seconds=1)),
                request("draftUpdate", 8 * DAY),
                request("draftPrepare", 6 * DAY),  # within the replay window
                request("decideProposal", 30 * DAY),  # not a draft request
            ]
        )
        await session.commit()

    done = await retain_drafts(WorkMaker(sessionmaker))

    assert done.requests_deleted == 2
    async with sessionmaker() as session:
        left = (await session.exec(select(IdempotencyRecord.operation))).all()
    assert sorted(left) == ["decideProposal", "draftPrepare"]


async def test_each_run_is_bounded(
    sessionmaker: SessionMaker, frozen_clock: clock.FrozenClock
) -> None:
    expired = clock.now() - 31 * DAY
    sent = [
        draft_row("acct", status=DraftStatus.OBSERVED, expires_at=expired - timedelta(seconds=i))
        for i in range(5)
    ]
    unsent = [draft_row("acct", expires_at=expired - timedelta(seconds=i)) for i in range(5)]
    await seed(sessionmaker, *sent, *unsent)
    make = WorkMaker(sessionmaker)

    first = await retain_drafts(make, limit=2)
    assert (first.values_dropped, first.drafts_deleted) == (2, 2)
    async with sessionmaker() as session:
        dropped = set(
            (
                await session.exec(
                    select(Draft.id).where(col(Draft.values_dropped_at).is_not(None))
                )
            ).all()
        )
    # The longest expired go first.
    assert dropped == {sent[4].id, sent[3].id}

    totals = [first.total]
    while totals[-1]:
        totals.append((await retain_drafts(make, limit=2)).total)
    assert totals == [4, 4, 2, 0]
    async with sessionmaker() as session:
        assert len((await session.exec(select(Draft.id))).all()) == 5


def test_the_worker_runs_retention_every_hour() -> None:
    from signoff.jobs.worker import sweeps

    (job,) = [j for j in sweeps(10, "q") if j.name == "q:run_draft_retention"]
    assert (job.minute, job.second) == ({0}, {0})
