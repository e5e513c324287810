"""Delivery fixtures: a worker ``ctx`` whose enqueues are recorded, so each test drives the
job functions itself (the app fixture runs without its embedded worker)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.config import Settings, load_sealer
from signoff.database import create_sessionmaker
from signoff.jobs.context import CTX_KEY, WorkerServices, open_http_client
from signoff.jobs.dispatcher import Dispatcher
from signoff.resolvers.core.work import Services as WorkServices
from signoff.resolvers.core.work import WorkMaker, delivery_job_id, notification_job_id


@dataclass
class RecordingJobs:
    """A ``JobQueue`` that only remembers what was enqueued."""

    enqueued: list[tuple[str, datetime | None]] = field(default_factory=list)
    notifications: list[tuple[str, datetime | None]] = field(default_factory=list)

    async def enqueue_delivery(
        self, proposal_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        self.enqueued.append((delivery_job_id(proposal_id, attempt), at))

    async def enqueue_notification(
        self, notification_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        self.notifications.append((notification_job_id(notification_id, attempt), at))


@dataclass
class Worker:
    ctx: dict[str, Any]
    jobs: RecordingJobs

    @property
    def services(self) -> WorkerServices:
        services: WorkerServices = self.ctx[CTX_KEY]
        return services

    async def deliver(self, proposal_id: str) -> str:
        """One attempt now, as the worker's dispatcher makes it (claim, send, record)."""
        return await Dispatcher(self.services, concurrency=1).deliver(proposal_id)


@pytest.fixture
async def worker(
    engine: AsyncEngine, settings: Settings, clean_database: None
) -> AsyncIterator[Worker]:
    """A worker process's ``ctx``; jitter is pinned so backoff is exactly its upper bound."""
    jobs = RecordingJobs()
    http = open_http_client(settings.destinations)
    work = WorkMaker(
        create_sessionmaker(engine),
        WorkServices(jobs=jobs, sealer=load_sealer(settings), destinations=settings.destinations),
    )
    services = WorkerServices(settings=settings, work=work, http=http, jitter=lambda: 1.0)
    yield Worker(ctx={CTX_KEY: services}, jobs=jobs)
    await http.close()
