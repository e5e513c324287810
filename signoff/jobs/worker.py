"""The arq side: ``ArqJobs`` enqueues into Redis, ``WorkerSettings`` runs ``signoff worker``."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, ClassVar

from arq import cron, func
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.cron import CronJob
from arq.typing import WorkerCoroutine
from arq.worker import Function, Worker, get_kwargs
from prometheus_client import start_http_server
from redis.exceptions import RedisError

from signoff import clock, metrics
from signoff.config import Settings, load_audit_signer, load_sealer
from signoff.constants import (
    ARQ_QUEUE_DEFAULT,
    DELIVER_JOB,
    DRAFT_RETENTION_INTERVAL_SECONDS,
    JOB_TIMEOUT_SECONDS,
    NOTIFY_JOB,
    RECONCILE_INTERVAL_SECONDS,
    WORKER_MAX_JOBS,
    WORKER_POLL_DELAY_SECONDS,
    WORKER_RECONNECT_SECONDS,
    WORKER_STOP_GRACE_SECONDS,
)
from signoff.database import create_engine, create_sessionmaker, is_unreachable, read_only
from signoff.errors import INTERNAL, ServiceUnavailable
from signoff.events import create_event_service
from signoff.jobs.context import CTX_KEY, WorkerServices, open_http_client, services_of
from signoff.jobs.delivery import (
    DISPATCHER_KEY,
    deliver_proposal,
    dispatcher_of,
    expire_due_proposals,
    lapse_executions,
    send_reminders,
    sweep_deliveries,
)
from signoff.jobs.dispatcher import Dispatcher
from signoff.jobs.draft_retention import run_draft_retention
from signoff.jobs.notifications import send_notifications, send_one_notification
from signoff.jobs.reconciliation import run_reconciliation
from signoff.jobs.slack_socket import slack_socket
from signoff.outages import Outage
from signoff.resolvers.core.key_check import verify_audit_key, verify_secret_key
from signoff.resolvers.core.work import Services as WorkServices
from signoff.resolvers.core.work import (
    WorkMaker,
    delivery_job_id,
    notification_job_id,
    wake_job_id,
)

logger = logging.getLogger("signoff.jobs")

# What a lost Redis raises: redis-py's own errors, or the socket's.
REDIS_DOWN = (RedisError, OSError)
SLACK_SOCKET_KEY = "slack_socket"


class ArqJobs:
    """A ``JobQueue`` over arq. A delivery due now is a wake job shared by its time bucket
    (``wake_job_id``), enqueued once per bucket by this process; a delivery due later is a
    job of its own per attempt, so a retry is never mistaken for a duplicate of an attempt
    that already ran. Either job only wakes a worker's dispatcher, which claims what is due.
    A notification is a job per attempt (``notification_job_id``) that sends it.
    """

    def __init__(self, settings: Settings, redis: ArqRedis | None = None) -> None:
        self.settings = settings
        self.redis = redis
        self._last_wake: str | None = None
        self.outage = Outage("Redis (job queue)")

    async def start(self) -> None:
        if self.redis is None:
            assert self.settings.redis_url is not None
            self.redis = await create_pool(
                RedisSettings.from_dsn(self.settings.redis_url),
                default_queue_name=self.settings.arq_queue,
            )

    async def stop(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()
            self.redis = None

    async def enqueue_delivery(
        self, proposal_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """Enqueue after commit; while Redis is away the delivery waits in the database, where
        the worker's sweep finds it once Redis is back (the outage is logged once)."""
        assert self.redis is not None, "ArqJobs.start() first"
        if at is not None and at > clock.now():
            job_id = delivery_job_id(proposal_id, attempt)
        else:
            at = None
            job_id = wake_job_id(self.settings.arq_queue, time.time())
            if job_id == self._last_wake:
                return
            # Noted before the await: approvals committing meanwhile share this job.
            self._last_wake = job_id
        try:
            await self.redis.enqueue_job(
                DELIVER_JOB,
                proposal_id,
                _job_id=job_id,
                _queue_name=self.settings.arq_queue,
                _defer_until=at,
            )
        except REDIS_DOWN as exc:
            self.outage.failed(type(exc).__name__)
            return
        self.outage.answered()

    async def enqueue_notification(
        self, notification_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """A job per attempt, enqueued after commit (deferred to a retry's time); while Redis
        is away the notification waits in the database for the periodic job."""
        assert self.redis is not None, "ArqJobs.start() first"
        try:
            await self.redis.enqueue_job(
                NOTIFY_JOB,
                notification_id,
                _job_id=notification_job_id(notification_id, attempt),
                _queue_name=self.settings.arq_queue,
                _defer_until=at if at is not None and at > clock.now() else None,
            )
        except REDIS_DOWN as exc:
            self.outage.failed(type(exc).__name__)
            return
        self.outage.answered()


async def startup(ctx: dict[str, Any]) -> None:
    """Open the database and the one shared HTTP client for this worker process."""
    settings: Settings = ctx.get("settings") or Settings.from_env()
    engine = create_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    ctx["engine"] = engine
    metrics.count_statements(engine)
    sealer = load_sealer(settings)
    # `signoff worker` has checked already; a worker started by `arq` itself has not.
    async with create_sessionmaker(engine)() as session:
        await verify_secret_key(session=session, sealer=sealer)
        await verify_audit_key(session=session, signer=load_audit_signer(settings))
    jobs = ArqJobs(settings, ctx["redis"])
    # Delivery outcomes go to the change feed: stamped and published right after commit,
    # as the API processes do, rather than waiting for their relay. A worker serves no
    # subscriber, so it publishes without listening: decoding every event on the channel,
    # its own included, cost it a share of each delivery (docs/delivery-throughput.md).
    sessionmaker = create_sessionmaker(engine)
    events = create_event_service(
        settings, sessionmaker, create_sessionmaker(read_only(engine)), audience=False
    )
    # The backlog's events are stamped by the upkeep's first tick, at once, while the
    # dispatcher claims: a restarted worker's first delivery does not wait for it.
    await events.start(tick_in_start=False)
    ctx["events"] = events
    services = WorkServices(
        jobs=jobs, events=events, sealer=sealer, destinations=settings.destinations
    )
    concurrency = settings.delivery_concurrency
    ctx[CTX_KEY] = WorkerServices(
        settings=settings,
        http=open_http_client(settings.destinations, concurrency),
        work=WorkMaker(sessionmaker, services),
    )
    ctx[DISPATCHER_KEY] = Dispatcher(services_of(ctx), concurrency=concurrency)
    await dispatcher_of(ctx).start()
    # With Redis, the worker holds Slack's Socket Mode connection (docs/slack.md).
    socket = slack_socket(services_of(ctx).work, settings)
    if socket is not None:
        await socket.start()
        ctx[SLACK_SOCKET_KEY] = socket
    if settings.metrics_port is not None:
        # A thread of its own: scrapes never wait for the event loop, and read no database.
        ctx["metrics_server"], _ = start_http_server(
            settings.metrics_port, addr=settings.metrics_host, registry=metrics.REGISTRY
        )


async def shutdown(ctx: dict[str, Any]) -> None:
    if SLACK_SOCKET_KEY in ctx:
        await ctx[SLACK_SOCKET_KEY].stop()
    if "metrics_server" in ctx:
        ctx["metrics_server"].shutdown()
        ctx["metrics_server"].server_close()
    if DISPATCHER_KEY in ctx:
        await dispatcher_of(ctx).stop()
    if CTX_KEY in ctx:
        await services_of(ctx).http.close()
    if "events" in ctx:
        await ctx["events"].stop()
    if "engine" in ctx:
        await ctx["engine"].dispose()


def sweeps(
    interval_seconds: int,
    queue_name: str,
    reconcile_seconds: int = RECONCILE_INTERVAL_SECONDS,
) -> list[CronJob]:
    """The sweeps every ``interval_seconds``, reconciliation every ``reconcile_seconds``,
    draft retention every ``DRAFT_RETENTION_INTERVAL_SECONDS``.

    ``unique`` makes one worker of many run each tick: arq gives the tick the job id
    ``<name>:<time>``, and job ids are global to the Redis database, so the name carries
    the queue name; otherwise workers of another queue would take this queue's ticks.
    """
    jobs: list[tuple[Callable[[dict[str, Any]], Awaitable[int]], int]] = [
        (sweep_deliveries, interval_seconds),
        (expire_due_proposals, interval_seconds),
        (lapse_executions, interval_seconds),
        (send_reminders, interval_seconds),
        (send_notifications, interval_seconds),
        (run_reconciliation, reconcile_seconds),
        (run_draft_retention, DRAFT_RETENTION_INTERVAL_SECONDS),
    ]
    return [
        cron(
            logged(job),
            name=f"{queue_name}:{job.__name__}",
            second=_seconds(seconds),
            minute=_minutes(seconds),
            run_at_startup=True,
            unique=True,
            keep_result=0,
        )
        for job, seconds in jobs
    ]


def logged(job: Callable[..., Awaitable[Any]]) -> WorkerCoroutine:
    """The job with one log line per run (job, job id, try, duration, error code): INFO, or
    DEBUG when it found nothing to do (returned 0), so idle sweeps stay out of the log. While
    the database or Redis is unreachable it does nothing instead of failing every tick: the
    outage is logged once (by the engine or the worker's poll) and the next run does the work."""

    @functools.wraps(job)
    async def run(ctx: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        error_code: str | None = None
        result: Any = None
        try:
            result = await job(ctx, *args, **kwargs)
            return result
        except Exception as exc:
            if isinstance(exc, REDIS_DOWN) or is_unreachable(exc):
                error_code = ServiceUnavailable.code
                return None
            error_code = INTERNAL
            raise
        finally:
            idle = error_code is None and type(result) is int and result == 0
            logger.log(
                logging.DEBUG if idle else logging.INFO,
                "job %s",
                job.__name__,
                extra={
                    "job": job.__name__,
                    "job_id": ctx.get("job_id"),
                    "job_try": ctx.get("job_try"),
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                    "error_code": error_code,
                },
            )

    return run


class ResilientWorker(Worker):
    """An arq ``Worker`` that rides out a Redis outage instead of exiting.

    arq's poll raises on the first failed Redis call, ending ``main``, and ``close`` then fails
    on the health-check key. Here a failed poll logs the outage once, waits and polls again
    (Redis's client reconnects by itself) while running jobs carry on; a job whose bookkeeping
    in Redis failed runs again, and delivery leases keep it from sending twice."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.redis_outage = Outage("Redis")

    async def _poll_iteration(self) -> None:
        try:
            await super()._poll_iteration()
        except REDIS_DOWN as exc:
            self.redis_outage.failed(type(exc).__name__)
            await asyncio.sleep(WORKER_RECONNECT_SECONDS)
            return
        self.redis_outage.answered()

    async def close(self) -> None:
        """arq's ``close``, except that Redis being away does not stop the shutdown."""
        if not self._handle_signals:
            self.handle_sig(signal.SIGUSR1)
        if self._pool is None:
            return
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
        with contextlib.suppress(*REDIS_DOWN):
            await self.pool.delete(self.health_check_key)
        if self.on_shutdown:
            await self.on_shutdown(self.ctx)
        with contextlib.suppress(*REDIS_DOWN):
            await self.pool.close(close_connection_pool=True)
        self._pool = None


def _seconds(period: int) -> set[int]:
    """The cron seconds of a period: under a minute, best a divisor of 60."""
    return set(range(0, 60, max(1, period))) if period < 60 else {0}


def _minutes(period: int) -> set[int] | None:
    """The cron minutes of a period of a minute or more (best a divisor of an hour)."""
    return None if period < 60 else set(range(0, 60, min(period // 60, 60)))


class WorkerSettings:
    """``arq signoff.jobs.worker.WorkerSettings`` works too; ``signoff worker`` is preferred."""

    functions: ClassVar[list[Function]] = [
        func(logged(deliver_proposal), name=DELIVER_JOB, keep_result=0),
        func(logged(send_one_notification), name=NOTIFY_JOB, keep_result=0),
    ]
    cron_jobs: ClassVar[list[CronJob]] = sweeps(10, ARQ_QUEUE_DEFAULT)
    on_startup = startup
    on_shutdown = shutdown
    queue_name = ARQ_QUEUE_DEFAULT
    max_jobs = WORKER_MAX_JOBS
    job_timeout = JOB_TIMEOUT_SECONDS
    # How long a delivery job may wait in Redis before it is seen: the delay bounds the
    # wait from enqueue to start (docs/delivery-throughput.md).
    poll_delay = WORKER_POLL_DELAY_SECONDS
    # On SIGTERM, jobs in flight get this long to finish before they are cancelled.
    job_completion_wait = WORKER_STOP_GRACE_SECONDS
    # Results of deliveries are not kept: the database is the record, and a kept result
    # would block the same job id (an attempt after retryProposal reset the count).
    keep_result = 0


def run(settings: Settings) -> None:
    """Run an arq worker against ``settings.redis_url`` until interrupted."""
    assert settings.redis_url is not None
    overrides: dict[str, Any] = {
        "redis_settings": RedisSettings.from_dsn(settings.redis_url),
        "queue_name": settings.arq_queue,
        "cron_jobs": sweeps(
            settings.sweep_interval_seconds,
            settings.arq_queue,
            settings.reconcile_interval_seconds,
        ),
        "max_jobs": settings.worker_max_jobs,
        "job_timeout": settings.job_timeout_seconds,
        "ctx": {"settings": settings},
    }
    # arq runs on the thread's event loop: uvloop's, as uvicorn's `auto` picks for the API
    # processes, where it is installed (not on Windows or PyPy).
    asyncio.set_event_loop(new_event_loop())
    ResilientWorker(**{**get_kwargs(WorkerSettings), **overrides}).run()  # type: ignore[arg-type]


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop where it is installed, asyncio's otherwise."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()
