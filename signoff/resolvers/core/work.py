"""The unit of work: one transaction, and the services its business rules may use.

It carries the session, clock, job queue, event publisher and sealer, typed, so a rule
never looks a service up by name, and holds what must happen after commit, so nothing is
sent for a change that rolled back. After-commit work only speeds things up: the sweeps
and the relay repair what a hook failed to do (docs/design.md section 7).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import make_transient_to_detached
from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff import clock
from signoff.constants import DELIVER_JOB_ID, NOTIFY_JOB_ID, WAKE_BUCKET_SECONDS, WAKE_JOB_ID
from signoff.database import SessionMaker
from signoff.destinations import DestinationPolicy
from signoff.evidence.sealing import Sealer
from signoff.models.inserts import insert_alone, insert_rows, insert_then_select
from signoff.models.records import RecordSelect, select_all_first

logger = logging.getLogger("signoff.work")

AfterCommit = Callable[[], Awaitable[None]]
BeforeCommit = Callable[[], Awaitable[None]]
# A read just before commit: what to read, and what to do with its records.
CommitRead = tuple[Callable[[], RecordSelect], Callable[[list[Any]], Awaitable[object]]]


class JobQueue(Protocol):
    """Where delivery and notification work is scheduled: arq on Redis, or the in-process
    runner."""

    async def enqueue_delivery(
        self, proposal_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """Schedule delivery attempt ``attempt`` of a proposal, at ``at`` or now."""

    async def enqueue_notification(
        self, notification_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """Send attempt ``attempt`` of a notification, at ``at`` or now."""


class Publisher(Protocol):
    """The change feed's relay: told just before a writer commits which change events it
    wrote, it returns what gets them stamped and published after the commit."""

    async def before_commit(
        self, session: AsyncSession, events: Sequence[Mapping[str, Any]]
    ) -> AfterCommit:
        """Called once ``session`` has written everything, ``events`` (the rows of its
        change events) included: stamps them in the transaction where transaction order
        is commit order (SQLite), reads what their frames show where that saves a read,
        and returns the after-commit hook that publishes them or wakes the stamper."""

    def committed_alone(self, events: Sequence[Mapping[str, Any]]) -> AfterCommit | None:
        """For a writer whose rows (``events`` among them) go as one statement outside a
        transaction: the after-commit hook ``before_commit`` would return, or ``None``
        where it must run in the writer's transaction (it stamps or reads there)."""

    async def relay(self) -> int:
        """Republish stamped events whose publish never happened; returns how many."""


def delivery_job_id(proposal_id: str, attempt: int) -> str:
    """One job id per attempt: a fixed id would be swallowed by arq's dedup of finished jobs."""
    return DELIVER_JOB_ID.format(proposal_id=proposal_id, attempt=attempt)


def notification_job_id(notification_id: str, attempt: int) -> str:
    """One job per attempt of a notification, as for deliveries."""
    return NOTIFY_JOB_ID.format(notification_id=notification_id, attempt=attempt)


def wake_job_id(queue: str, moment: float) -> str:
    """The job id shared by every delivery that comes due in ``moment``'s time bucket (a
    Unix time): arq keeps one job per id, so a worker is woken once per bucket."""
    return WAKE_JOB_ID.format(queue=queue, bucket=int(moment // WAKE_BUCKET_SECONDS))


@dataclass(frozen=True)
class Services:
    """What the process offers its business rules; any of them may be absent (a CLI command
    has no job queue; a test may run without an event relay)."""

    jobs: JobQueue | None = None
    events: Publisher | None = None
    sealer: Sealer | None = None
    # The Slack app's bot token (SIGNOFF_SLACK_BOT_TOKEN), sealed into SLACK_APP channels.
    slack_bot_token: str | None = None
    # Where targets and channels may point: by default only public addresses.
    destinations: DestinationPolicy = field(default_factory=DestinationPolicy)


class MissingService(RuntimeError):
    """A rule needed a service this process was not started with (a wiring fault)."""


class UnitOfWork:
    """One transaction of business rules, and what to do once it has committed."""

    def __init__(self, session: AsyncSession, services: Services | None = None) -> None:
        self.session = session
        self.services = services or Services()
        self._after_commit: list[AfterCommit] = []
        self._before_commit: dict[str, BeforeCommit] = {}
        self._reads_at_commit: dict[str, CommitRead] = {}
        # Proposals that moved in this transaction (their Slack messages are brought up
        # to date just before it commits: signoff.resolvers.core.message_updates).
        self.moved_proposals: set[str] = set()
        self._events: list[Mapping[str, Any]] = []  # this transaction's change events
        self._rows: dict[sa.Table, list[dict[str, Any]]] = {}
        self._wrote_rows = False  # whether this transaction has written ``_rows`` yet
        # The publisher's hook, where the rows went as a statement of their own (``write_rows``).
        self._published_alone: AfterCommit | None = None
        # Rows a planned move returned as records, and new rows held for commit
        # (``insert_with_commit``), by model and id, none of them in the session, as the
        # transaction left them: what reads later in the transaction may take instead.
        self.moved_records: dict[tuple[type[SQLModel], str], Any] = {}

    def now(self) -> datetime:
        return clock.now()

    @property
    def sealer(self) -> Sealer:
        if self.services.sealer is None:
            raise MissingService("This process has no sealer: start it with one.")
        return self.services.sealer

    def after_commit(self, hook: AfterCommit) -> None:
        """Run ``hook`` once this transaction has committed (never if it rolls back)."""
        self._after_commit.append(hook)

    def before_commit(self, key: str, hook: BeforeCommit) -> None:
        """Run ``hook`` just before this transaction commits, once per ``key`` however often
        it is asked for: writes that sum up what the transaction's rules did."""
        self._before_commit.setdefault(key, hook)

    def read_at_commit(
        self,
        key: str,
        select: Callable[[], RecordSelect],
        then: Callable[[list[Any]], Awaitable[object]],
    ) -> None:
        """Just before this transaction commits, once per ``key``: read what ``select()``
        then says, after the rows held for commit and in their round trip, and pass the
        records to ``then`` (which may write). Hooks of ``before_commit`` run first."""
        self._reads_at_commit.setdefault(key, (select, then))

    def schedule_delivery(self, proposal_id: str, attempt: int, at: datetime | None = None) -> None:
        """Enqueue a delivery attempt once the transaction that made it due has committed."""
        jobs = self.services.jobs
        if jobs is None:
            return  # the sweep finds due proposals whatever happens here

        async def enqueue() -> None:
            await jobs.enqueue_delivery(proposal_id, attempt, at)

        self.after_commit(enqueue)

    def schedule_notification(
        self, notification_id: str, attempt: int, at: datetime | None = None
    ) -> None:
        """Send a notification's attempt once the transaction that wrote it has committed
        (the periodic ``send_notifications`` finds it anyway, one sweep later)."""
        jobs = self.services.jobs
        if jobs is None:
            return

        async def enqueue() -> None:
            await jobs.enqueue_notification(notification_id, attempt, at)

        self.after_commit(enqueue)

    def changed(self, event: Mapping[str, Any]) -> None:
        """A change event was written (``event``: its row, inserted at commit): at commit
        the event publisher sees this transaction's events, and publishes them after it."""
        if self.services.events is not None:
            self._events.append(event)

    def insert_at_commit(self, table: sa.Table, row: dict[str, Any]) -> None:
        """Insert ``row`` (every column given) just before commit, with the transaction's
        other rows of ``table`` in one statement: for the records nothing reads back in
        the transaction that writes them (audit records, change events). A batch of
        transitions then costs one insert per table, not an ORM object per row."""
        self._rows.setdefault(table, []).append(row)

    def insert_with_commit(self, *rows: SQLModel) -> None:
        """Insert new ORM rows just before commit, with the rows ``insert_at_commit`` holds
        (each table's in one statement, the tables in the order first held), rather than
        now (``insert``): for rows that nothing in the transaction reads or changes in the
        database before it commits. They stay out of the session, in ``moved_records``."""
        for row in rows:
            table, columns = _insert_of(type(row))
            self.insert_at_commit(table, {column: getattr(row, key) for key, column in columns})
            self.moved_records[(type(row), getattr(row, "id"))] = row  # noqa: B009

    async def insert(self, *rows: SQLModel) -> None:
        """Insert new ORM rows now, a statement each in the order given (each may refer to
        those before it), in one round trip, and attach them to the session as persistent
        and clean: later reads in the transaction find them in the identity map, and
        nothing flushes them again. Rows the caller added before are flushed first, as the
        new ones may refer to them."""
        await self.insert_then_select(rows, [])

    async def insert_then_select(
        self, rows: Sequence[SQLModel], selects: Sequence[RecordSelect]
    ) -> list[list[Any]]:
        """``insert`` ``rows``, then read the records of ``selects`` (reads, or planned
        moves' ``UPDATE … RETURNING``), in one round trip where the connection allows."""
        if rows and self.session.new:
            await self.session.flush()
        batches = []
        for row in rows:
            table, columns = _insert_of(type(row))
            batches.append((table, [{column: getattr(row, key) for key, column in columns}]))
        found = await insert_then_select(await self.session.connection(), batches, selects)
        for row in rows:
            make_transient_to_detached(row)
            self.session.add(row)
        return found

    async def add_unique(self, row: SQLModel, refused: Exception) -> None:
        """Insert ``row`` now (``insert``: one statement, not a flush); if a unique key
        refuses it, roll back and raise ``refused``. The key is the check: a look beforehand
        would race another writer."""
        try:
            await self.insert(row)
        except IntegrityError:
            await self.rollback()
            raise refused from None

    async def select_first(self, selects: Sequence[RecordSelect]) -> list[list[Any]]:
        """The records of each of ``selects`` (``records.select_all``), read before the
        transaction sends anything else: on PostgreSQL outside it, so that its ``BEGIN``
        waits for its first write (``records.select_all_first``)."""
        return await select_all_first(await self.session.connection(), selects)

    async def write_rows(self, *, last: bool = False) -> None:
        """Insert the rows ``insert_at_commit`` holds now rather than at commit, each table's
        in one statement and the tables in one round trip: where the caller must see a
        unique key's refusal (an idempotency record) before it commits. ``last``: the
        caller commits next; where the transaction has sent nothing and its commit would
        send nothing else (no hooks or ORM changes, no publisher's reads), the rows go as
        one statement committed on its own, no ``BEGIN``, no ``COMMIT`` (``insert_alone``)."""
        rows, self._rows = self._rows, {}
        if not rows:
            return
        connection = await self.session.connection()
        batches = list(rows.items())
        if last and not self._before_commit and not self._reads_at_commit:
            published = self._alone_published()
            if published is not None and await insert_alone(connection, batches):
                self._wrote_rows, self._published_alone = True, published
                return
        await insert_rows(connection, batches)
        self._wrote_rows = True

    def _alone_published(self) -> AfterCommit | None:
        """What the commit runs first where the rows go alone (``write_rows``), if they
        may: the publisher's hook (one that does nothing without a publisher)."""
        session = self.session
        if session.new or session.dirty or session.deleted:
            return None
        publisher = self.services.events
        return _nothing if publisher is None else publisher.committed_alone(self._events)

    async def _read_at_commit(self) -> None:
        """The reads of ``read_at_commit``, with the rows held for commit in one round trip."""
        reads, self._reads_at_commit = self._reads_at_commit, {}
        if not reads:
            return
        rows, self._rows = self._rows, {}
        selects = [select() for select, _ in reads.values()]
        connection = await self.session.connection()
        found = await insert_then_select(connection, list(rows.items()), selects)
        self._wrote_rows = self._wrote_rows or bool(rows)
        for (_, then), records in zip(reads.values(), found, strict=True):
            await then(records)

    async def commit(self) -> None:
        """Commit, then run the after-commit hooks; a failing hook is logged, never raised."""
        while self._before_commit or self._reads_at_commit:
            while self._before_commit:
                key = next(iter(self._before_commit))
                await self._before_commit.pop(key)()
            await self._read_at_commit()
        await self.write_rows(last=True)
        publisher, events = self.services.events, self._events
        if self._published_alone is not None:
            self._after_commit.insert(0, self._published_alone)
        # Audit records too (``_rows``): they get their log positions in the stamping run.
        elif (events or self._wrote_rows) and publisher is not None:
            # After every write of the transaction, so that what it reads for the events'
            # frames is what the commit leaves. First of the hooks: subscribers' frames
            # should not wait for a job's enqueue.
            self._after_commit.insert(0, await publisher.before_commit(self.session, events))
        hooks, self._after_commit, self._events = self._after_commit, [], []
        self.moved_records, self._wrote_rows, self._published_alone = {}, False, None
        await self.session.commit()
        for hook in hooks:
            try:
                await hook()
            except Exception as exc:
                logger.warning("after-commit hook failed: %s", type(exc).__name__)

    async def rollback(self) -> None:
        """Roll back, and forget what was to happen after a commit that will not come."""
        self._after_commit, self._events, self._rows = [], [], {}
        self._before_commit, self.moved_proposals = {}, set()
        self._reads_at_commit = {}
        self.moved_records, self._wrote_rows, self._published_alone = {}, False, None
        await self.session.rollback()


async def _nothing() -> None:
    return None


@functools.cache
def _insert_of(model: type[SQLModel]) -> tuple[sa.Table, tuple[tuple[str, str], ...]]:
    """``model``'s table and its columns' attribute names."""
    mapper = sa.inspect(model)
    table = mapper.local_table
    columns = tuple((prop.key, prop.columns[0].key) for prop in mapper.column_attrs)
    return table, columns


class WorkMaker:
    """Opens units of work on fresh sessions, all with the same services."""

    def __init__(self, sessionmaker: SessionMaker, services: Services | None = None) -> None:
        self.sessionmaker = sessionmaker
        self.services = services or Services()

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[UnitOfWork]:
        async with self.sessionmaker() as session:
            yield UnitOfWork(session, self.services)
