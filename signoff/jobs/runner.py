"""The in-process runner: the embedded default's worker, inside ``signoff serve``.

It runs the same ``Dispatcher`` and the same periodic sweeps as the arq worker, with
the same ``ctx``; only the transport of delivery jobs differs: an attempt due now wakes
the dispatcher at once, one due later wakes it by a timer of this event loop (one per
job id, so an attempt already waiting is not scheduled twice). Notifications likewise
wake one sender of this process, which sends what is due in batches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from signoff import clock
from signoff.config import Settings
from signoff.constants import (
    DRAFT_RETENTION_INTERVAL_SECONDS,
    NOTIFICATION_RETRY_WAKE_SECONDS,
    WORKER_STOP_GRACE_SECONDS,
)
from signoff.jobs.context import CTX_KEY, WorkerServices, open_http_client
from signoff.jobs.delivery import (
    DISPATCHER_KEY,
    expire_due_proposals,
    lapse_executions,
    send_reminders,
    sweep_deliveries,
)
from signoff.jobs.dispatcher import Dispatcher
from signoff.jobs.draft_retention import run_draft_retention
from signoff.jobs.notifications import send_notifications
from signoff.jobs.reconciliation import run_reconciliation
from signoff.resolvers.core.work import WorkMaker, delivery_job_id, notification_job_id

logger = logging.getLogger("signoff.jobs.runner")


class InProcessJobs:
    """A ``JobQueue`` whose jobs wake a ``Dispatcher`` of this event loop."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.ctx: dict[str, Any] = {}
        self._dispatcher: Dispatcher | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._running: set[asyncio.Task[Any]] = set()
        self._notifications_due = asyncio.Event()

    async def enqueue_delivery(
        self, proposal_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        delay = 0.0 if at is None else (at - clock.now()).total_seconds()
        if delay <= 0:
            self._wake()
            return
        job_id = delivery_job_id(proposal_id, attempt)
        if job_id not in self._timers:
            self._timers[job_id] = asyncio.get_running_loop().call_later(
                delay, self._release, job_id
            )

    async def enqueue_notification(
        self, notification_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """Wake this process's notification sender now, or by a timer at a retry's time."""
        delay = 0.0 if at is None else (at - clock.now()).total_seconds()
        if delay <= 0:
            self._notifications_due.set()
            return
        job_id = notification_job_id(notification_id, attempt)
        if job_id not in self._timers:
            self._timers[job_id] = asyncio.get_running_loop().call_later(
                delay, self._release_notifications, job_id
            )

    def _release_notifications(self, job_id: str) -> None:
        self._timers.pop(job_id, None)
        self._notifications_due.set()

    async def _send_notifications_when_woken(self) -> None:
        """One sender for this process: woken when notifications are written or a retry
        comes due, it sends what is due (a burst goes in batches, not a task each) until a
        claim finds nothing."""
        while True:
            await self._notifications_due.wait()
            self._notifications_due.clear()
            sent = await self._run(send_notifications.__name__, send_notifications(self.ctx))
            if sent is None:
                # A failed run (logged) leaves what was due waiting: try again shortly
                # rather than at the next sweep, which takes one batch an interval.
                await asyncio.sleep(NOTIFICATION_RETRY_WAKE_SECONDS)
                self._notifications_due.set()
            elif sent:
                # More may be waiting: a batch comes back short when the sweep claimed
                # part of it at the same time, so only a claim that finds nothing stops.
                self._notifications_due.set()

    def _release(self, job_id: str) -> None:
        self._timers.pop(job_id, None)
        self._wake()

    def _wake(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.wake()

    async def start(self, work: WorkMaker) -> None:
        """Open the shared HTTP client and start the dispatcher and the sweeps (``work``'s
        services name this runner as their job queue)."""
        concurrency = self.settings.delivery_concurrency
        services = WorkerServices(
            settings=self.settings,
            work=work,
            http=open_http_client(self.settings.destinations, concurrency),
        )
        self.ctx[CTX_KEY] = services
        self._dispatcher = Dispatcher(services, concurrency=concurrency)
        self.ctx[DISPATCHER_KEY] = self._dispatcher
        await self._dispatcher.start()
        self._tasks.append(
            asyncio.create_task(
                self._every(
                    self.settings.sweep_interval_seconds,
                    sweep_deliveries,
                    expire_due_proposals,
                    lapse_executions,
                    send_reminders,
                    send_notifications,
                )
            )
        )
        self._tasks.append(
            asyncio.create_task(
                self._every(self.settings.reconcile_interval_seconds, run_reconciliation)
            )
        )
        self._tasks.append(asyncio.create_task(self._send_notifications_when_woken()))
        self._tasks.append(
            asyncio.create_task(self._every(DRAFT_RETENTION_INTERVAL_SECONDS, run_draft_retention))
        )

    async def stop(self, grace_seconds: float = WORKER_STOP_GRACE_SECONDS) -> None:
        """Stop taking jobs, let the ones in flight finish (cancelling a job mid-transaction
        would strand its connection), then close the HTTP client."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._dispatcher is not None:
            await self._dispatcher.stop(grace_seconds)
            self._dispatcher = None
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._running:
            _, late = await asyncio.wait(self._running, timeout=grace_seconds)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        services = self.ctx.pop(CTX_KEY, None)
        if isinstance(services, WorkerServices):
            await services.http.close()

    async def _run(self, name: str, job: Awaitable[Any]) -> Any:
        """Run one job to its end even if the loop awaiting it is cancelled by ``stop``;
        returns its result (``None`` if it failed)."""
        task = asyncio.ensure_future(job)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            logger.error("job %s failed: %s", name, type(exc).__name__)
            return None

    async def _every(
        self, seconds: float, *jobs: Callable[[dict[str, Any]], Awaitable[int]]
    ) -> None:
        while True:
            for job in jobs:
                await self._run(job.__name__, job(self.ctx))
            await asyncio.sleep(seconds)
