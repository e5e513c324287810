"""The dispatcher: one per worker process, it claims due deliveries in batches, sends them
concurrently and records their outcomes in batches (docs/design.md section 4.14).

Three loops: **claim** (when woken, or every ``DISPATCH_POLL_SECONDS``), **flush** (the
buffered outcomes, each still fenced by its lease) and **renew** (the leases in flight,
every third of the lease). No session is open while a request is in flight or a loop waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from signoff import clock, metrics
from signoff.constants import (
    CLAIM_INTERVAL_SECONDS,
    DISPATCH_POLL_SECONDS,
    OUTCOME_FLUSH_SECONDS,
    OUTCOME_FLUSH_SIZE,
    WAKE_BUCKET_SECONDS,
    WORKER_STOP_GRACE_SECONDS,
)
from signoff.database import database_condition, is_unreachable
from signoff.delivery import AttemptOutcome, send
from signoff.jobs.context import WorkerServices
from signoff.models import ProposalState, ResponseClass
from signoff.resolvers.delivery.claims import (
    Claim,
    Delivery,
    any_claimable,
    claim_deliveries,
    renew_leases,
)
from signoff.resolvers.delivery.outcomes import Attempted, record_outcomes

logger = logging.getLogger("signoff.jobs")

RECORD_RETRY_SECONDS = 0.5
RECORD_TRIES_WHEN_STOPPING = 3
# The longest a claim of freed slots waits for the rest of the requests in flight, in
# claim intervals after the first of them finished (``Dispatcher._slot_freed``).
REFILL_WAIT_LIMIT = 4


@dataclass
class Sent:
    """A delivery whose request finished, waiting for its outcome to be recorded."""

    delivery: Delivery
    outcome: AttemptOutcome


class Dispatcher:
    """Claims, sends and records deliveries for one worker process."""

    def __init__(
        self,
        services: WorkerServices,
        *,
        concurrency: int,
        flush_size: int = OUTCOME_FLUSH_SIZE,
        flush_seconds: float = OUTCOME_FLUSH_SECONDS,
        poll_seconds: float = DISPATCH_POLL_SECONDS,
        claim_interval: float = CLAIM_INTERVAL_SECONDS,
        wake_bucket: float = WAKE_BUCKET_SECONDS,
    ) -> None:
        self.services = services
        self.concurrency = concurrency
        self.flush_size = flush_size
        self.flush_seconds = flush_seconds
        self.poll_seconds = poll_seconds
        self.claim_interval = claim_interval
        self.wake_bucket = wake_bucket
        self._wake = asyncio.Event()
        self._look_again_at = 0.0  # monotonic; a look owed to a wake bucket
        # A claim of the slots finished requests free, owed once every request in flight
        # has finished, or a while after the first of them (``_slot_freed``).
        self._refill: asyncio.TimerHandle | None = None
        self._outcome_waiting = asyncio.Event()
        self._flush_now = asyncio.Event()
        # Claimed and not yet recorded: proposal id -> (delivery, since). Their leases are
        # renewed until their outcomes are recorded.
        self._in_flight: dict[str, tuple[Delivery, float]] = {}
        # Of those, the ones whose requests have finished: their slots are free again.
        self._answered: set[str] = set()
        self._sent: list[Sent] = []
        self._sending: set[asyncio.Task[None]] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._stopping = False  # no more claims
        self._closing = asyncio.Event()  # no more flushes or renewals: stop() records the rest

    @property
    def free_slots(self) -> int:
        """Slots for requests: those whose requests finished free theirs before their
        outcomes are recorded (the next claim is told, so its targets' limits do not count
        them either), but no more than ``concurrency`` outcomes wait to be recorded."""
        sending = len(self._in_flight) - len(self._answered)
        return min(self.concurrency - sending, 2 * self.concurrency - len(self._in_flight))

    def wake(self) -> None:
        """Claim soon: a delivery came due, or slots were freed."""
        self._wake.set()

    def wake_for_bucket(self) -> None:
        """Claim soon, and look again once a wake bucket has passed: deliveries that came
        due later in the bucket share this wake job (``ArqJobs.enqueue_delivery``), and may
        have committed after the first claim looked. The bucket began no earlier than the
        first of them committed, so a look a bucket after this wake sees them all, whatever
        the clocks of the processes that enqueued them."""
        self._look_again_at = max(self._look_again_at, time.monotonic() + self.wake_bucket)
        self.wake()

    async def start(self) -> None:
        self._stopping = False
        self._closing.clear()
        self._loops = [
            asyncio.create_task(self._claim_loop(), name="signoff-claim"),
            asyncio.create_task(self._flush_loop(), name="signoff-flush"),
            asyncio.create_task(self._renew_loop(), name="signoff-renew"),
        ]

    async def stop(self, grace_seconds: float = WORKER_STOP_GRACE_SECONDS) -> None:
        """Stop claiming, let requests in flight finish (up to ``grace_seconds``; a request
        cut off is safe: its lease lapses and it is sent again), and record every outcome.
        No loop is cancelled: each checks between transactions whether to stop."""
        self._stopping = True
        self._cancel_refill()
        self.wake()
        claim_loop, others = self._loops[:1], self._loops[1:]
        await asyncio.gather(*claim_loop)
        if self._sending:
            _, late = await asyncio.wait(self._sending, timeout=grace_seconds)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        self._closing.set()
        self._outcome_waiting.set()
        self._flush_now.set()
        await asyncio.gather(*others)
        await self._record(self._take_sent())
        self._loops = []

    async def deliver(self, proposal_id: str) -> str:
        """Claim, send and record one proposal's attempt now, whatever the loops are doing;
        returns its new state, the refusal, ``NOT_DUE`` or ``SUPERSEDED``."""
        claim = await self._claim(1, only=[proposal_id])
        if proposal_id in claim.refused:
            return claim.refused[proposal_id]
        if not claim.deliveries:
            return "NOT_DUE"
        (delivery,) = claim.deliveries
        self._in_flight[proposal_id] = (delivery, time.monotonic())
        sent = asyncio.Event()
        renewer = asyncio.create_task(self._renew_loop(sent))
        try:
            outcome = await self._send(delivery)
        finally:
            sent.set()
            await renewer
        (state,) = await self._record([Sent(delivery, outcome)])
        return "SUPERSEDED" if state is None else state.value

    async def _claim(self, limit: int, only: Sequence[str] | None = None) -> Claim:
        settings = self.services.settings
        answered = [self._in_flight[i][0].lease for i in self._answered]
        async with self.services.work() as work:
            return await claim_deliveries(
                work,
                limit=limit,
                lease_seconds=settings.delivery_lease_seconds,
                only=only,
                answered=answered,
            )

    async def _claim_loop(self) -> None:
        woken = True
        while not self._stopping:
            self._wake.clear()
            wait = self.poll_seconds
            claimed_at = time.monotonic()
            self._cancel_refill()  # this claim takes the slots it was for
            if self.free_slots > 0:
                try:
                    wait = await self._claim_free_slots(woken)
                except Exception as exc:
                    if not is_unreachable(exc):  # an outage is logged once, by the engine
                        logger.warning(
                            "claiming deliveries failed: %s",
                            database_condition(exc) or type(exc).__name__,
                        )
            if self._look_again_at > claimed_at:
                wait = min(wait, max(self._look_again_at - time.monotonic(), 0.0))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
            woken = self._wake.is_set()
            # Wakes that come close together share one claim: under a steady stream of
            # approvals a claim takes several deliveries instead of one each.
            pause = self.claim_interval - (time.monotonic() - claimed_at)
            if woken and pause > 0 and not self._stopping:
                await asyncio.sleep(pause)

    async def _claim_free_slots(self, woken: bool) -> float:
        """Claim and start sending; returns how long to wait before looking again."""
        if not woken and not await self._anything_due():
            return self.poll_seconds
        free = self.free_slots
        claim = await self._claim(free)
        logger.debug(
            "claimed %d of %d free slots (%d refused)",
            len(claim.deliveries),
            free,
            len(claim.refused),
        )
        for delivery in claim.deliveries:
            self._start(delivery)
        if claim.retry_at is None:
            return self.poll_seconds
        until = (claim.retry_at - clock.now()).total_seconds()
        return min(self.poll_seconds, max(until, 0.001))

    async def _anything_due(self) -> bool:
        async with self.services.read_sessionmaker() as session:
            return await any_claimable(session, clock.now())

    def _start(self, delivery: Delivery) -> None:
        self._in_flight[delivery.proposal.id] = (delivery, time.monotonic())
        task = asyncio.create_task(self._send_and_buffer(delivery))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, delivery: Delivery) -> AttemptOutcome:
        proposal = delivery.proposal
        return await send(
            self.services.http,
            proposal,
            delivery.target,
            delivery.secret,
            proposal.delivery_attempt_count,
            delivery.body,
        )

    async def _send_and_buffer(self, delivery: Delivery) -> None:
        outcome = await self._send(delivery)
        self._sent.append(Sent(delivery, outcome))
        self._answered.add(delivery.proposal.id)
        self._outcome_waiting.set()
        # Waiting longer gains nothing once every request in flight has finished.
        all_answered = len(self._in_flight) == len(self._answered)
        if len(self._sent) >= self.flush_size or all_answered:
            self._flush_now.set()
        self._slot_freed(all_answered)

    def _slot_freed(self, all_answered: bool) -> None:
        """A request finished: claim its slot with the others of its batch, not alone.
        Each claim, flush and stamping round costs about the same whatever it carries,
        and a claim at the first answers of a batch split it in two for good: the halves
        finish apart and each refilled its own. So the claim waits until every request in
        flight has finished, or ``REFILL_WAIT_LIMIT`` claim intervals after the first of
        them (a slow receiver holds back the others' slots no longer than that)."""
        if all_answered:
            self._cancel_refill()
            self.wake()
        elif self._refill is None:
            self._refill = asyncio.get_running_loop().call_later(
                REFILL_WAIT_LIMIT * self.claim_interval, self._refilled
            )

    def _refilled(self) -> None:
        self._refill = None
        self.wake()

    def _cancel_refill(self) -> None:
        if self._refill is not None:
            self._refill.cancel()
            self._refill = None

    def _take_sent(self) -> list[Sent]:
        sent, self._sent = self._sent, []
        self._outcome_waiting.clear()
        self._flush_now.clear()
        return sent

    async def _flush_loop(self) -> None:
        # Closing is checked before every wait: stop() sets it with the events, and a flush
        # under way when it does clears them (``_take_sent``), so they cannot be relied on.
        while not self._closing.is_set():
            await self._outcome_waiting.wait()
            if self._closing.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flush_now.wait(), self.flush_seconds)
            await self._record(self._take_sent())
            # Recorded outcomes free room for more (``free_slots``), claimed as answers are.
            self._slot_freed(len(self._in_flight) == len(self._answered))

    async def _record(self, batch: list[Sent]) -> list[ProposalState | None]:
        """Write a batch of outcomes, trying again while the database refuses; the
        deliveries stay in flight (their leases renewed) until it is written."""
        if not batch:
            return []
        attempts = [Attempted(s.delivery.proposal, s.delivery.target, s.outcome) for s in batch]
        failures = 0
        while True:
            try:
                async with self.services.work() as work:
                    states = await record_outcomes(work, attempts, jitter=self.services.jitter)
                break
            except Exception as exc:
                failures += 1
                condition = database_condition(exc) or type(exc).__name__
                if self._stopping and failures >= RECORD_TRIES_WHEN_STOPPING:
                    # Not lost: the leases lapse and these deliveries are sent again.
                    logger.error("stopping with %d outcomes unrecorded: %s", len(batch), condition)
                    return [None] * len(batch)
                if not is_unreachable(exc):
                    logger.warning(
                        "recording %d delivery outcomes failed: %s; trying again",
                        len(batch),
                        condition,
                    )
                await asyncio.sleep(RECORD_RETRY_SECONDS)
        for sent, state in zip(batch, states, strict=True):
            self._in_flight.pop(sent.delivery.proposal.id, None)
            self._answered.discard(sent.delivery.proposal.id)
            _report(sent, state)
        return states

    async def _renew_loop(self, until: asyncio.Event | None = None) -> None:
        """Every third of the lease, renew the leases held longer than that, until
        ``until`` (or the dispatcher's closing) is set."""
        lease = self.services.settings.delivery_lease_seconds
        stop = until or self._closing
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), lease / 3)
            if stop.is_set():
                return
            older = time.monotonic() - lease / 3
            leases = [d.lease for d, since in self._in_flight.values() if since <= older]
            try:
                async with self.services.work() as work:
                    await renew_leases(work, leases, lease_seconds=lease)
            except Exception as exc:
                if not is_unreachable(exc):
                    logger.warning(
                        "lease renewal failed for %d deliveries: %s",
                        len(leases),
                        database_condition(exc) or type(exc).__name__,
                    )


def _report(sent: Sent, state: ProposalState | None) -> None:
    outcome, proposal = sent.outcome, sent.delivery.proposal
    metrics.observe_delivery(outcome)
    # A failed attempt is worth an operator's look; it names the proposal and the error
    # code, never the payload or the target's secret.
    failed = outcome.response_class in (ResponseClass.RETRYABLE, ResponseClass.TERMINAL)
    logger.log(
        logging.WARNING if failed else logging.INFO,
        "delivery proposal=%s attempt=%d class=%s code=%s state=%s",
        proposal.id,
        proposal.delivery_attempt_count,
        outcome.response_class,
        outcome.error_code,
        state or "SUPERSEDED",
    )
