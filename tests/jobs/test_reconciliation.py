"""Reconciliation: what dead workers and lapsed claims left behind is repaired once, recorded."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest
from sqlmodel import col, select

from signoff import clock, metrics
from signoff.delivery import send
from signoff.events import feed
from signoff.jobs.reconciliation import run_reconciliation
from signoff.models import (
    AuditEvent,
    ChangeEvent,
    ChangeKind,
    HumanTask,
    Proposal,
    ReconciliationRun,
    RepairAction,
    Target,
)
from signoff.resolvers.core.work import Services as WorkServices
from signoff.resolvers.core.work import UnitOfWork, WorkMaker
from signoff.resolvers.delivery import reconciliation
from signoff.resolvers.delivery.claims import claim_delivery
from signoff.resolvers.delivery.outcomes import record_outcome
from signoff.resolvers.delivery.reconciliation import LapsedLease, Reconciliation, Repair, reconcile
from tests.conftest import requires_postgres
from tests.events.test_service import RecordingTransport, _service
from tests.helpers import CLAIM, GraphQLClient, build_world, record_event
from tests.jobs.conftest import Worker
from tests.jobs.test_delivery import approved, read
from tests.receivers import Receiver, serve


async def _events(worker: Worker, entity_id: str) -> list[ChangeEvent]:
    async with worker.services.sessionmaker() as session:
        rows = await session.exec(
            select(ChangeEvent)
            .where(ChangeEvent.entity_id == entity_id)
            .order_by(col(ChangeEvent.id))
        )
        return list(rows.all())


def _released_count() -> float:
    sample = metrics.REGISTRY.get_sample_value(
        "signoff_reconciliation_repairs_total", {"action_type": "release_lease"}
    )
    return sample or 0.0


async def _runs(worker: Worker, *, repaired: int) -> list[ReconciliationRun]:
    async with worker.services.sessionmaker() as session:
        stmt = select(ReconciliationRun).where(ReconciliationRun.repaired_count == repaired)
        return list((await session.exec(stmt)).all())


async def _repairs(worker: Worker) -> list[RepairAction]:
    async with worker.services.sessionmaker() as session:
        return list((await session.exec(select(RepairAction))).all())


async def test_a_worker_killed_while_applying_is_released_and_delivery_completes(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    async with serve(Receiver()) as receiver:
        world = await build_world(gql, url=receiver.url)
        receiver.secret = world.signing_secret
        proposal = await approved(world)
        async with worker.services.work() as work:  # claims, then is killed: never records
            killed = await claim_delivery(work, proposal["id"], lease_seconds=60)
        assert killed is not None and killed.delivery_lease == 1

        assert await run_reconciliation(worker.ctx) == 0  # the lease still holds
        frozen_clock.advance(60)
        before = _released_count()
        assert await run_reconciliation(worker.ctx) == 1
        assert _released_count() == before + 1  # /metrics counts what the run repaired
        [done_run] = await _runs(worker, repaired=1)
        done = Reconciliation(done_run, 0)
        assert (done.run.state, done.run.scanned_count, done.run.repaired_count) == (
            "SUCCEEDED",
            1,
            1,
        )
        assert done.run.finished_at == clock.now()
        [repair] = await _repairs(worker)
        assert repair.operation_key == f"release_lease:{proposal['id']}:1"
        assert (repair.action_type, repair.entity_id) == ("release_lease", proposal["id"])
        assert repair.reconciliation_run_id == done.run.id
        assert repair.before["state"] == "APPLYING" and repair.after["state"] == "QUEUED"
        released = (await _events(worker, proposal["id"]))[-1]
        assert (released.kind, released.snapshot["state"]) == ("proposal.lease_released", "QUEUED")
        # Due now: the next attempt is enqueued after commit.
        assert worker.jobs.enqueued[-1] == (f"deliver:{proposal['id']}:2", None)
        async with worker.services.sessionmaker() as session:
            row = await session.get(Proposal, proposal["id"])
            assert row is not None and row.delivery_lease == 1  # the fencing token is kept

        # The killed worker comes back: released, it holds nothing and settles nothing.
        async with worker.services.work() as work:
            target = await work.session.get(Target, killed.target_id)
            assert target is not None
            outcome = await send(worker.services.http, killed, target, world.signing_secret, 1)
            assert await record_outcome(work, killed, target, outcome) is None

        assert await worker.deliver(proposal["id"]) == "APPLIED"
        again = await reconcile(worker.services.work)
        assert (again.run.state, again.run.repaired_count) == ("SUCCEEDED", 0)
    assert len(await _repairs(worker)) == 1
    state = await read(world, proposal["id"])
    assert state["state"] == "APPLIED" and state["deliveryAttemptCount"] == 2


@requires_postgres
async def test_concurrent_reconciliations_repair_each_lease_once(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = await build_world(gql)
    stuck = [await approved(world) for _ in range(5)]
    for proposal in stuck:
        async with worker.services.work() as work:
            assert await claim_delivery(work, proposal["id"], lease_seconds=60) is not None
    frozen_clock.advance(61)
    # Both runs find every stuck lease before either repairs one: only the compare-and-set
    # can keep them from repairing the same lease twice.
    both_scanned = asyncio.Barrier(2)
    scan = reconciliation.lapsed_leases

    async def scan_then_wait(make: WorkMaker, *, limit: int) -> list[LapsedLease]:
        found = await scan(make, limit=limit)
        await both_scanned.wait()
        return found

    monkeypatch.setattr(reconciliation, "lapsed_leases", scan_then_wait)

    runs: list[Reconciliation] = await asyncio.gather(
        reconcile(worker.services.work), reconcile(worker.services.work)
    )
    assert all(run.run.state == "SUCCEEDED" for run in runs)
    assert [run.run.scanned_count for run in runs] == [len(stuck)] * 2
    assert sum(run.run.repaired_count for run in runs) == len(stuck)
    repairs = await _repairs(worker)
    assert sorted(r.operation_key for r in repairs) == sorted(
        f"release_lease:{p['id']}:1" for p in stuck
    )
    for proposal in stuck:
        kinds = [e.kind for e in await _events(worker, proposal["id"])]
        assert kinds.count("proposal.lease_released") == 1


async def test_an_expired_claim_is_lapsed_with_an_event(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    task = (await world.propose())["task"]
    claimed = (await gql(CLAIM, {"id": task["id"]}, world.reviewers[0]))["claimTask"]
    expires = datetime.fromisoformat(claimed["claimExpiresAt"])
    frozen_clock.advance((expires - clock.now()).total_seconds() - 1)
    assert (await reconcile(worker.services.work)).run.repaired_count == 0
    async with worker.services.sessionmaker() as session:
        row = await session.get(HumanTask, task["id"])
        assert row is not None
        version = row.version
    frozen_clock.advance(1)

    done = await reconcile(worker.services.work)
    assert done.run.repaired_count == 1
    [repair] = await _repairs(worker)
    assert repair.operation_key == f"lapse_claim:{task['id']}:{version}"
    async with worker.services.sessionmaker() as session:
        row = await session.get(HumanTask, task["id"])
        assert row is not None
        assert (row.state, row.assignee_id, row.claim_expires_at) == ("OPEN", None, None)
        audit = (
            await session.exec(
                select(AuditEvent).where(
                    AuditEvent.target_id == task["id"], AuditEvent.action == "task.claim_lapsed"
                )
            )
        ).one()
    assert audit.details["operation_key"] == repair.operation_key
    lapsed = (await _events(worker, task["id"]))[-1]
    assert (lapsed.kind, lapsed.snapshot["state"], lapsed.entity_version) == (
        "task.claim_lapsed",
        "OPEN",
        version + 1,
    )
    assert (await reconcile(worker.services.work)).run.repaired_count == 0
    # Open for anyone in the queue, the previous holder included.
    again = (await gql(CLAIM, {"id": task["id"]}, world.reviewers[1]))["claimTask"]
    assert again["state"] == "CLAIMED"


async def test_an_approval_past_its_deadline_is_expired_once(
    gql: GraphQLClient, worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    proposed = await world.propose(expiresInSeconds=60)
    frozen_clock.advance(60)
    done = await reconcile(worker.services.work)
    assert done.run.repaired_count == 1
    [repair] = await _repairs(worker)
    assert repair.operation_key == f"expire_proposal:{proposed['proposal']['id']}"
    assert repair.after == {"state": "CANCELLED", "expiredTaskIds": [proposed["task"]["id"]]}
    assert (await reconcile(worker.services.work)).run.repaired_count == 0


async def test_an_unpublished_event_is_republished(
    worker: Worker, frozen_clock: clock.FrozenClock
) -> None:
    transport = RecordingTransport()
    events = _service(worker.services.sessionmaker, transport)
    await events.hub.start(0)
    make = WorkMaker(worker.services.sessionmaker, WorkServices(events=events))
    async with make() as work:
        lost = record_event(
            work, kind=ChangeKind.QUEUE_CREATED, entity_type="queue", entity_id="q-1"
        )
        await work.commit()
    async with worker.services.sessionmaker() as session:  # stamped, then the process died
        await feed.stamp_pending(session)
        await session.commit()
    frozen_clock.advance(5)

    done = await reconcile(make)
    assert done.republished == 1
    assert (done.run.state, done.run.repaired_count) == ("SUCCEEDED", 0)
    assert len(transport.published) == 1
    await events.mark_published()
    async with worker.services.sessionmaker() as session:
        row = await session.get(ChangeEvent, lost)
        assert row is not None and row.published_at is not None
        assert len((await session.exec(select(ReconciliationRun))).all()) == 1
    assert (await reconcile(make)).republished == 0
    await events.hub.stop()


async def test_a_failing_repair_leaves_the_others_made_and_the_run_partial(
    gql: GraphQLClient,
    worker: Worker,
    frozen_clock: clock.FrozenClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = await build_world(gql)
    broken, fine = await approved(world), await approved(world)
    for proposal in (broken, fine):
        async with worker.services.work() as work:
            assert await claim_delivery(work, proposal["id"], lease_seconds=60) is not None
    frozen_clock.advance(60)
    release = reconciliation.release

    async def failing_once(work: UnitOfWork, lapsed: LapsedLease, run_id: str) -> Repair | None:
        if lapsed.proposal_id == broken["id"]:
            await release(work, lapsed, run_id)  # its transition is rolled back with it
            raise RuntimeError("the database went away")
        return await release(work, lapsed, run_id)

    monkeypatch.setattr(reconciliation, "release", failing_once)
    done = await reconcile(worker.services.work)
    assert (done.run.state, done.run.repaired_count, done.run.error_code) == (
        "PARTIAL",
        1,
        "RuntimeError",
    )
    assert [r.entity_id for r in await _repairs(worker)] == [fine["id"]]
    assert [e.kind for e in await _events(worker, broken["id"])][-1] == (
        "proposal.delivery_started"
    )
    monkeypatch.undo()
    assert (await reconcile(worker.services.work)).run.repaired_count == 1
