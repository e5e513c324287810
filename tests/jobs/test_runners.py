"""End to end: approving in the API gets the action delivered, by the in-process runner
(embedded default) or by an arq worker on Redis."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
import warnings
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from arq.connections import RedisSettings
from arq.worker import Worker

from signoff import clock
from signoff.config import Settings
from signoff.constants import WAKE_BUCKET_SECONDS
from signoff.database import SessionMaker
from signoff.errors import AuditKeyMismatch, SecretKeyMismatch
from signoff.evidence.audit_key import signer_of
from signoff.evidence.sealing import Sealer, decode_key, new_key_text
from signoff.jobs.worker import (
    ArqJobs,
    ResilientWorker,
    WorkerSettings,
    shutdown,
    startup,
    sweeps,
)
from signoff.resolvers.core.key_check import verify_audit_key, verify_secret_key
from tests.conftest import REDIS_URL, requires_redis
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.test_delivery import RETRY, approved, read
from tests.processes import LOOPBACK_NETWORKS
from tests.receivers import Answer, Receiver, serve
from tests.redis_keys import unique_queue

# How long a test's worker may take to finish the jobs it is running when the test ends.
STOP_POLLING_SECONDS = 10


async def applied(world: World, proposal_id: str) -> dict[str, Any]:
    """Poll the API (up to 15 s) until the proposal is applied."""
    for _ in range(300):
        state = await read(world, proposal_id)
        if state["state"] == "APPLIED":
            return state
        await asyncio.sleep(0.05)
    raise AssertionError(f"not applied: {state}")


class TestEmbedded:
    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return Settings(
            database_url=database_url,
            secret_key=os.environ["SIGNOFF_SECRET_KEY"],
            audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
            delivery_allow_networks=LOOPBACK_NETWORKS,
        )

    async def test_approving_delivers_with_no_other_process(self, gql: GraphQLClient) -> None:
        async with serve(Receiver()) as receiver:
            world = await build_world(gql, url=receiver.url)
            receiver.secret = world.signing_secret
            proposal = await approved(world)
            state = await applied(world, proposal["id"])
        assert state["deliveryAttemptCount"] == 1
        assert [r.webhook_id for r in receiver.requests] == [f"msg_{proposal['id']}"]


def arq_settings(database_url: str, queue: str) -> Settings:
    assert REDIS_URL is not None
    return Settings(
        database_url=database_url,
        redis_url=REDIS_URL,
        arq_queue=queue,
        sweep_interval_seconds=1,
        secret_key=os.environ["SIGNOFF_SECRET_KEY"],
        audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
        delivery_allow_networks=LOOPBACK_NETWORKS,
    )


@contextlib.asynccontextmanager
async def arq_worker(settings: Settings) -> AsyncIterator[Worker]:
    """``signoff worker``'s arq worker in this process, on the test's own queue.

    Its ``close`` waits for every job it cancelled whatever each ended with, then runs the
    shutdown (the dispatcher stops). arq's own gave up at the first cancelled job, so the
    dispatcher went on claiming and recording deliveries in the tests that followed.
    """
    assert settings.redis_url is not None
    worker = ResilientWorker(
        functions=WorkerSettings.functions,
        cron_jobs=sweeps(settings.sweep_interval_seconds, settings.arq_queue),
        on_startup=startup,
        on_shutdown=shutdown,
        redis_settings=RedisSettings.from_dsn(settings.redis_url),
        queue_name=settings.arq_queue,
        ctx={"settings": settings},
        handle_signals=False,
        poll_delay=0.05,
        keep_result=0,
    )
    task = asyncio.create_task(worker.async_run())
    try:
        yield worker
    finally:
        await _stop_polling(worker, task)
        with warnings.catch_warnings():
            # arq 0.28 closes its pool with redis' deprecated close(); nothing of ours.
            warnings.simplefilter("ignore", DeprecationWarning)
            await worker.close()


async def _stop_polling(worker: Worker, task: asyncio.Task[None]) -> None:
    """End the worker's poll loop after the poll in progress, and its running jobs.

    arq's burst mode returns between polls once ``max_burst_jobs`` jobs have started, so
    setting it to 0 stops the loop without cancelling it. A poll cancelled inside the
    WATCH pipeline it starts jobs with leaves that pipeline holding a connection; redis
    then warns when the pipeline is collected, which failed whatever test was running.
    """
    worker.burst, worker.max_burst_jobs = True, 0
    done, _ = await asyncio.wait({task}, timeout=STOP_POLLING_SECONDS)
    if not done:  # a job still running: cancel as arq's own shutdown would
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@requires_redis
class TestArq:
    @pytest.fixture
    def settings(self, database_url: str) -> Settings:
        return arq_settings(database_url, unique_queue())

    async def test_approving_enqueues_and_a_worker_delivers(
        self,
        gql: GraphQLClient,
        settings: Settings,
    ) -> None:
        async with serve(Receiver()) as receiver, arq_worker(settings):
            world = await build_world(gql, url=receiver.url)
            receiver.secret = world.signing_secret
            proposal = await approved(world)
            state = await applied(world, proposal["id"])
        assert state["deliveryAttemptCount"] == 1
        assert len(receiver.requests) == 1

    async def test_a_retried_proposal_is_delivered_again_under_the_same_job_id(
        self,
        gql: GraphQLClient,
        settings: Settings,
    ) -> None:
        """After retryProposal the attempt count restarts, so ``deliver:<id>:1`` comes again:
        arq must not swallow it as a duplicate of the finished first job."""
        async with serve(Receiver([Answer(400), Answer(200)])) as receiver, arq_worker(settings):
            world = await build_world(gql, url=receiver.url)
            receiver.secret = world.signing_secret
            proposal = await approved(world)
            for _ in range(300):
                if (await read(world, proposal["id"]))["deliveryTerminal"]:
                    break
                await asyncio.sleep(0.05)
            retry = {
                "proposalId": proposal["id"],
                "payloadDigest": proposal["payloadDigest"],
                "idempotencyKey": "again",
            }
            await gql(RETRY, {"input": retry}, world.admin)
            state = await applied(world, proposal["id"])
        assert [r.attempt for r in receiver.requests] == [1, 1]
        assert {r.webhook_id for r in receiver.requests} == {f"msg_{proposal['id']}"}
        assert [a["attemptNumber"] for a in state["attempts"]] == [1, 1]

    async def test_one_job_per_deferred_attempt(self, settings: Settings) -> None:
        jobs = ArqJobs(settings)
        await jobs.start()
        later = clock.now() + timedelta(minutes=5)
        try:
            assert jobs.redis is not None
            await jobs.enqueue_delivery("p-1", 1, later)
            await jobs.enqueue_delivery("p-1", 1, later)
            await jobs.enqueue_delivery("p-1", 2, later)
            queued = await jobs.redis.queued_jobs(queue_name=settings.arq_queue)
            assert sorted(job.job_id or "" for job in queued) == ["deliver:p-1:1", "deliver:p-1:2"]
        finally:
            if jobs.redis is not None:
                await jobs.redis.delete(
                    settings.arq_queue, "arq:job:deliver:p-1:1", "arq:job:deliver:p-1:2"
                )
            await jobs.stop()

    async def test_deliveries_due_now_share_a_wake_job_per_bucket(self, settings: Settings) -> None:
        """An API process enqueues one wake job per bucket however many approvals commit in
        it; the next bucket gets a job of its own."""
        jobs = ArqJobs(settings)
        await jobs.start()
        ids: set[str] = set()
        try:
            assert jobs.redis is not None
            await wait_for_bucket_start()
            for proposal_id in ("p-1", "p-2", "p-3"):
                await jobs.enqueue_delivery(proposal_id, 1)
            first = await jobs.redis.queued_jobs(queue_name=settings.arq_queue)
            ids.update(job.job_id or "" for job in first)
            assert [job.args for job in first] == [("p-1",)]
            await asyncio.sleep(WAKE_BUCKET_SECONDS)
            await jobs.enqueue_delivery("p-4", 1)
            second = await jobs.redis.queued_jobs(queue_name=settings.arq_queue)
            ids.update(job.job_id or "" for job in second)
            assert sorted(job.args for job in second) == [("p-1",), ("p-4",)]
            assert all(i.startswith(f"{settings.arq_queue}:wake:") for i in ids)
        finally:
            if jobs.redis is not None:
                await jobs.redis.delete(settings.arq_queue, *(f"arq:job:{i}" for i in ids))
            await jobs.stop()


async def wait_for_bucket_start() -> None:
    """Sleep until a wake bucket has just begun, so what follows fits in one bucket."""
    await asyncio.sleep(WAKE_BUCKET_SECONDS - time.time() % WAKE_BUCKET_SECONDS + 0.001)


async def test_a_worker_started_by_arq_itself_refuses_another_key(
    database_url: str, sessionmaker: SessionMaker
) -> None:
    """``arq signoff.jobs.worker.WorkerSettings`` skips the CLI's check: start-up makes it."""
    suite = Sealer(decode_key(os.environ["SIGNOFF_SECRET_KEY"]))
    async with sessionmaker() as session:
        await verify_secret_key(session=session, sealer=suite)
    ctx: dict[str, Any] = {
        "settings": Settings(
            database_url=database_url,
            secret_key=new_key_text(),
            audit_signing_key=os.environ["SIGNOFF_AUDIT_SIGNING_KEY"],
            delivery_allow_networks=LOOPBACK_NETWORKS,
        )
    }
    try:
        with pytest.raises(SecretKeyMismatch, match="SIGNOFF_SECRET_KEY does not match"):
            await startup(ctx)
    finally:
        await shutdown(ctx)


async def test_a_worker_started_by_arq_itself_refuses_another_audit_signing_key(
    database_url: str, sessionmaker: SessionMaker
) -> None:
    suite = signer_of(decode_key(os.environ["SIGNOFF_AUDIT_SIGNING_KEY"]))
    async with sessionmaker() as session:
        await verify_audit_key(session=session, signer=suite)
    ctx: dict[str, Any] = {
        "settings": Settings(
            database_url=database_url,
            secret_key=os.environ["SIGNOFF_SECRET_KEY"],
            audit_signing_key=new_key_text(),
            delivery_allow_networks=LOOPBACK_NETWORKS,
        )
    }
    try:
        with pytest.raises(AuditKeyMismatch, match="SIGNOFF_AUDIT_SIGNING_KEY is not the one"):
            await startup(ctx)
    finally:
        await shutdown(ctx)
