"""The transition core: the one way state changes, is audited and reaches the change feed.

Each aggregate's ``Lifecycle`` is a table of ``Edge``s (signoff.resolvers.core.lifecycles).
``Lifecycle.move`` is its only compare-and-set: one conditional ``UPDATE … RETURNING`` that
bumps the version, with the audit record and change event written from one ``Happening``
and follow-up work run after commit; ``Lifecycle.refuse`` explains a lost race
(docs/design.md section 7).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Generic, NoReturn, TypeVar

import sqlalchemy as sa
from sqlalchemy import update
from sqlalchemy.orm.util import identity_key
from sqlmodel import SQLModel

from signoff.errors import NotFound, TransitionNotAllowed
from signoff.models import AuditEvent, ChangeEvent, ChangeKind
from signoff.models.base import new_ids
from signoff.models.records import RecordSelect, record_columns, records
from signoff.resolvers.core.work import UnitOfWork

M = TypeVar("M", bound=SQLModel)
AUDIT_EVENTS: sa.Table = AuditEvent.__table__  # type: ignore[attr-defined]
CHANGE_EVENTS: sa.Table = ChangeEvent.__table__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Happening:
    """One thing that happened, described once: the audit record and the change event
    are both written from it."""

    entity_type: str
    entity_id: str
    actor_id: str | None
    action: str | None = None  # the audit action; ``None``: nothing to audit
    kind: ChangeKind | None = None  # the change event; ``None``: nothing for the feed
    details: Mapping[str, Any] = field(default_factory=dict)  # audit details
    version: int | None = None
    queue_id: str | None = None
    proposal_id: str | None = None
    session_key: str | None = None
    snapshot: Mapping[str, Any] = field(default_factory=dict)


def record(work: UnitOfWork, happening: Happening) -> str | None:
    """Write the audit record and the change event of ``happening`` in the transaction
    (inserted at commit, batched with the transaction's others); returns the change
    event's id, if it has one."""
    return record_all(work, [happening])[0]


def record_all(work: UnitOfWork, happenings: Sequence[Happening]) -> list[str | None]:
    """``record`` for a batch (the rows one statement moved), in one pass: their ids
    minted together and one time for them all, the moment the batch moved."""
    now = work.now()
    ids = iter(new_ids(sum((h.action is not None) + (h.kind is not None) for h in happenings)))
    event_ids: list[str | None] = []
    for happening in happenings:
        if happening.action is not None:
            work.insert_at_commit(
                AUDIT_EVENTS,
                {
                    "id": next(ids),
                    "action": happening.action,
                    "actor_id": happening.actor_id,
                    "target_type": happening.entity_type,
                    "target_id": happening.entity_id,
                    "details": dict(happening.details),
                    "created_at": now,
                    "position": None,  # stamped after commit (docs/design.md section 15)
                    "leaf_hash": None,
                },
            )
        if happening.kind is None:
            event_ids.append(None)
            continue
        event_id = next(ids)
        event = {
            "id": event_id,
            "cursor": None,
            "kind": happening.kind.value,
            "entity_type": happening.entity_type,
            "entity_id": happening.entity_id,
            "entity_version": happening.version,
            "queue_id": happening.queue_id,
            "proposal_id": happening.proposal_id,
            "session_key": happening.session_key,
            "actor_id": happening.actor_id,
            "snapshot": dict(happening.snapshot),
            "occurred_at": now,
            "published_at": None,
        }
        work.insert_at_commit(CHANGE_EVENTS, event)
        work.changed(event)
        event_ids.append(event_id)
    return event_ids


@dataclass(frozen=True)
class Outcome:
    """What an edge writes when it leads to one particular state."""

    kind: ChangeKind | None
    action: str | None


S = TypeVar("S", bound=StrEnum)


@dataclass(frozen=True)
class Edge(Generic[S]):
    """One allowed transition: from any of ``sources`` to one of the states in ``outcomes``."""

    name: str
    sources: frozenset[S]
    outcomes: Mapping[S, Outcome]

    @classmethod
    def of(
        cls,
        name: str,
        sources: Iterable[S],
        target: S,
        kind: ChangeKind | None,
        action: str | None,
    ) -> Edge[S]:
        """An edge with a single target state."""
        return cls(name, frozenset(sources), {target: Outcome(kind, action)})

    @property
    def target(self) -> S:
        """The edge's target, for edges with exactly one."""
        (only,) = self.outcomes
        return only


@dataclass(frozen=True)
class Stamp(Generic[S]):
    """A two-state switch stored as a nullable time: ``unset`` while the column is NULL,
    ``stamped`` from the time a move set it (a target's ``paused_at``)."""

    unset: S
    stamped: S


@dataclass(frozen=True)
class Subject:
    """How an aggregate's row appears in the feed: its scope and its snapshot."""

    queue_id: str | None
    proposal_id: str | None
    snapshot: Mapping[str, Any]
    session_key: str | None = None


@dataclass(frozen=True)
class Planned:
    """A move's guard and values written once, with a named ``bindparam`` for each value
    that varies between calls: ``Lifecycle.move_planned`` compiles its statement once per
    ``kind`` and sends only the parameters. Beside the caller's parameters the statement
    may use ``entity_id`` (the row's id) and ``moved_at`` (the move's time, which
    ``updated_at`` takes)."""

    kind: Hashable
    build: Callable[[], tuple[Any, Mapping[str, Any]]]  # (guard or None, values)


# The move's own parameters in a planned statement.
ENTITY_ID = "entity_id"
MOVED_AT = "moved_at"

Describe = Callable[[UnitOfWork, Any], Awaitable[Subject]]
FollowUp = Callable[[UnitOfWork, Any], None]


class Lifecycle(Generic[M, S]):
    """One aggregate's transition table and the compare-and-set that applies it."""

    def __init__(
        self,
        entity_type: str,
        model: type[M],
        edges: Sequence[Edge[S]],
        *,
        describe: Describe,
        follow_up: FollowUp | None = None,
        state_field: str = "state",
        stamp: Stamp[S] | None = None,
    ) -> None:
        self.entity_type = entity_type
        self.state_field = state_field  # the column the table's states are stored in
        self.stamp = stamp
        self.model = model
        self.edges = tuple(edges)
        if stamp is not None and any(len(e.sources) > 1 for e in self.edges):
            raise ValueError(f"{entity_type}: an edge of a switch leaves from one state")
        self._describe = describe
        self._follow_up = follow_up
        self._table: Any = model.__table__  # type: ignore[attr-defined]

    def allows(self, source: S, target: S) -> bool:
        return any(source in e.sources and target in e.outcomes for e in self.edges)

    def state_of(self, row: M) -> Any:
        """The row's state in this lifecycle's table."""
        stored = getattr(row, self.state_field)
        if self.stamp is None:
            return stored
        return self.stamp.unset if stored is None else self.stamp.stamped

    async def reread(self, work: UnitOfWork, entity_id: str) -> M:
        """After a move that matched nothing: roll back what the call wrote and read the row
        as whoever got there first left it (``NOT_FOUND`` if it is gone)."""
        await work.rollback()
        row = await work.session.get(self.model, entity_id, populate_existing=True)
        if row is None:
            raise NotFound(f"No such {self.entity_type.replace('_', ' ')}.")
        return row

    async def refuse(
        self, work: UnitOfWork, entity_id: str, explain: Callable[[M], Exception]
    ) -> NoReturn:
        """Refuse a call whose move matched nothing, with the error ``explain`` makes of the
        row as it now is: the one way a lost race or a stale expectation is answered."""
        raise explain(await self.reread(work, entity_id))

    async def move(
        self,
        work: UnitOfWork,
        edge: Edge[S],
        entity_id: str,
        *,
        actor_id: str | None,
        guard: Any = None,
        values: Mapping[str, Any] | None = None,
        details: Mapping[str, Any] | None = None,
        published: Mapping[str, Any] | None = None,
    ) -> M | None:
        """Apply ``edge`` to one row if it is in a source state and ``guard`` holds; the
        winner gets the updated row (audited, in the feed, followed up), others ``None``.
        ``published`` adds to the change event's snapshot (an amendment's diff)."""
        moved = await self.move_all(
            work,
            edge,
            [entity_id],
            actor_id=actor_id,
            guard=guard,
            values=values,
            details=details,
            published=published,
        )
        return moved[0] if moved else None

    async def move_all(
        self,
        work: UnitOfWork,
        edge: Edge[S],
        entity_ids: Sequence[str],
        *,
        actor_id: str | None,
        guard: Any = None,
        values: Mapping[str, Any] | None = None,
        details: Mapping[str, Any] | None = None,
        published: Mapping[str, Any] | None = None,
    ) -> list[M]:
        """``move`` for many rows in one statement (sweeps); returns the rows that moved."""
        if not entity_ids:
            self._check(edge)
            return []
        table = self._table
        which = table.c.id.in_(entity_ids) if len(entity_ids) > 1 else table.c.id == entity_ids[0]
        return await self.move_where(
            work,
            edge,
            which,
            actor_id=actor_id,
            guard=guard,
            values=values,
            details=details,
            published=published,
        )

    async def move_where(
        self,
        work: UnitOfWork,
        edge: Edge[S],
        which: Any,
        *,
        actor_id: str | None,
        guard: Any = None,
        values: Mapping[str, Any] | None = None,
        details: Mapping[str, Any] | None = None,
        published: Mapping[str, Any] | None = None,
        as_records: bool = False,
    ) -> list[M]:
        """``move`` for the rows ``which`` selects (a condition on the table, such as
        ``id IN (<subquery>)``), in one statement: a batch claim chooses its rows inside the
        statement that moves them. ``as_records``: the rows come back as records (JSON
        columns decoded when first read), not ORM instances the session keeps, unless the
        session holds instances of the model, which the ORM's statement refreshes."""
        self._check(edge)
        as_records = as_records and not self._held(work)
        rows = await self._compare_and_set(
            work, edge, which, guard, dict(values or {}), as_records=as_records
        )
        # The batch's audit records and change events are written in one pass, then each
        # row's follow-up, as ``_happened`` does for one.
        happenings = [
            await self._happening(
                work, row, self._outcome(edge, row), actor_id, details or {}, published
            )
            for row in rows
        ]
        record_all(work, happenings)
        if self._follow_up is not None:
            for row in rows:
                self._follow_up(work, row)
        return rows

    async def move_planned(
        self,
        work: UnitOfWork,
        edge: Edge[S],
        entity_id: str,
        planned: Planned,
        parameters: Mapping[str, Any],
        *,
        actor_id: str | None,
        details: Mapping[str, Any] | None = None,
        inserting: Sequence[SQLModel] = (),
    ) -> M | None:
        """``move`` of one row with a ``Planned`` guard and values: the same compare-and-set,
        audit record, change event and follow-up, from a statement compiled once.

        The row comes back as a record (kept in ``work.moved_records``); one the session
        holds as an ORM instance moves through the ORM, which refreshes it, as ``move``
        does. ``inserting``: new rows inserted just before, in the move's round trip."""
        self._check(edge)
        bound = {**parameters, ENTITY_ID: entity_id, MOVED_AT: work.now()}
        session = work.session
        rows: list[M]
        if identity_key(self.model, entity_id) in session.identity_map:
            await work.insert(*inserting)
            stmt = self._planned(edge, planned, self.model).execution_options(
                populate_existing=True, synchronize_session=False
            )
            rows = list((await session.exec(stmt, params=bound)).scalars().all())
        else:
            kind = (self.entity_type, edge.name, planned.kind)
            move = RecordSelect(
                self.model, kind, lambda _: self._planned(edge, planned, None), bound
            )
            (rows,) = await work.insert_then_select(inserting, [move])
            for row in rows:
                work.moved_records[(self.model, entity_id)] = row
        for row in rows:
            await self._happened(work, row, self._outcome(edge, row), actor_id, details)
        return rows[0] if rows else None

    def _planned(self, edge: Edge[S], planned: Planned, orm: type[M] | None) -> Any:
        """The statement of a planned move: returning the ORM model (``orm``), or the
        columns of its records."""
        table = self._table
        state = table.c[self.state_field]
        guard, given = planned.build()
        values = dict(given)
        moved_at = sa.bindparam(MOVED_AT, type_=sa.DateTime(timezone=True))
        if self.state_field not in values:
            values[self.state_field] = self._entered(edge, state, moved_at)
        if "updated_at" in table.c:
            values.setdefault("updated_at", moved_at)
        # The sources as equalities: an IN list would be rendered anew per execution.
        conditions = [
            table.c.id == sa.bindparam(ENTITY_ID, type_=table.c.id.type),
            self._in(state, edge.sources, expanding=False),
        ]
        if guard is not None:
            conditions.append(guard)
        stmt = (
            (update(orm) if orm is not None else sa.update(table))
            .where(sa.and_(*conditions))
            .values(**values)
        )
        if orm is not None:
            return stmt.returning(orm)
        return stmt.returning(*record_columns(self.model))

    def _check(self, edge: Edge[S]) -> None:
        if edge not in self.edges:
            raise TransitionNotAllowed(
                f"{edge.name!r} is not a transition of a {self.entity_type}.", edge=edge.name
            )

    async def created(
        self,
        work: UnitOfWork,
        row: M,
        *,
        kind: ChangeKind,
        action: str,
        actor_id: str | None,
        details: Mapping[str, Any] | None = None,
        inserted: bool = False,
    ) -> M:
        """Insert a new row (its first state), audited and in the feed like any transition.

        The row goes in as one statement with every column given (its version is 1, as
        the event says), and then joins the session as if it had been loaded: an ORM
        flush of a single new row cost a proposal about a sixth of its time. ``inserted``:
        the caller inserted it already, with others (``UnitOfWork.insert``)."""
        if not inserted:
            await work.insert(row)
        await self._happened(work, row, Outcome(kind, action), actor_id, details)
        return row

    async def announce(
        self,
        work: UnitOfWork,
        row: M,
        *,
        kind: ChangeKind | None,
        action: str | None,
        actor_id: str | None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Record what a statement other than ``move`` did to a row (the incident upsert,
        which counts an occurrence whether or not the row existed)."""
        record(
            work, await self._happening(work, row, Outcome(kind, action), actor_id, details or {})
        )

    async def _happened(
        self,
        work: UnitOfWork,
        row: M,
        outcome: Outcome,
        actor_id: str | None,
        details: Mapping[str, Any] | None,
        published: Mapping[str, Any] | None = None,
    ) -> None:
        record(work, await self._happening(work, row, outcome, actor_id, details or {}, published))
        if self._follow_up is not None:
            self._follow_up(work, row)

    async def _compare_and_set(
        self,
        work: UnitOfWork,
        edge: Edge[S],
        which: Any,
        guard: Any,
        values: dict[str, Any],
        *,
        as_records: bool = False,
    ) -> list[M]:
        table = self._table
        state = table.c[self.state_field]
        if self.state_field not in values:
            values[self.state_field] = self._entered(edge, state, work.now())
        if "updated_at" in table.c:
            values.setdefault("updated_at", work.now())
        conditions = [which, self._in(state, edge.sources)]
        if guard is not None:
            conditions.append(guard)
        if as_records:
            # A Core statement: no ORM instance built, kept or synchronised per row.
            moved = sa.update(table).where(sa.and_(*conditions)).values(**values)
            connection = await work.session.connection()
            found = await connection.execute(moved.returning(*record_columns(self.model)))
            return records(self.model, found)
        # The rows come back whole and refresh the session's copies (populate_existing), so
        # the ORM's own synchronisation of the session (a pre-fetch of the matched keys and
        # an evaluation of the new values) would only repeat it.
        stmt = (
            update(self.model)
            .where(sa.and_(*conditions))
            .values(**values)
            .returning(self.model)
            .execution_options(populate_existing=True, synchronize_session=False)
        )
        return list((await work.session.exec(stmt)).scalars().all())

    def _held(self, work: UnitOfWork) -> bool:
        """Whether the session holds ORM instances of the model (a move must refresh them)."""
        return any(type(row) is self.model for row in work.session.identity_map.values())

    def _entered(self, edge: Edge[S], state: Any, now: Any) -> Any:
        """What the state column is set to: the edge's one target, or left as it is (a
        switch's stamp is ``now``)."""
        if len(edge.outcomes) != 1:
            return state
        if self.stamp is None:
            return edge.target.value
        if edge.target == self.stamp.unset:
            return None
        return state if edge.target in edge.sources else now

    def _in(self, state: Any, sources: frozenset[S], *, expanding: bool = True) -> Any:
        if self.stamp is None:
            values = sorted(source.value for source in sources)
            if expanding:
                return state.in_(values)
            return sa.or_(*(state == value for value in values))
        (source,) = sources
        return state.is_(None) if source == self.stamp.unset else state.is_not(None)

    def _outcome(self, edge: Edge[S], row: M) -> Outcome:
        state = self.state_of(row)
        for target, outcome in edge.outcomes.items():
            if state == target.value:
                return outcome
        raise TransitionNotAllowed(
            f"{edge.name!r} may not lead a {self.entity_type} to {state}.", edge=edge.name
        )

    async def _happening(
        self,
        work: UnitOfWork,
        row: M,
        outcome: Outcome,
        actor_id: str | None,
        details: Mapping[str, Any],
        published: Mapping[str, Any] | None = None,
    ) -> Happening:
        """What a move of ``row`` that led to ``outcome`` is, as its records write it."""
        subject = await self._describe(work, row)
        return Happening(
            entity_type=self.entity_type,
            entity_id=getattr(row, "id"),  # noqa: B009
            actor_id=actor_id,
            action=outcome.action,
            kind=outcome.kind,
            details=details,
            version=getattr(row, "version", None),
            queue_id=subject.queue_id,
            proposal_id=subject.proposal_id,
            session_key=subject.session_key,
            snapshot={**subject.snapshot, **(published or {})},
        )
