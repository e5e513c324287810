"""DataLoaders: nested fields cost one query per kind of object, not one per row.

A list field that knows what its items' nested fields will ask (``schema.lookahead``) loads
it up front with ``warm``; the fields then answer with ``now_or_later``, a plain value when
loaded, which graphql-core completes in place instead of awaiting. Loaders answer records
(``signoff.models.records``), not ORM instances.
"""

from __future__ import annotations

import functools
from asyncio import Future
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar, cast

import strawberry
from sqlmodel import SQLModel
from sqlmodel.ext.asyncio.session import AsyncSession
from strawberry.dataloader import AbstractCache, DataLoader

from signoff.constants import FEED_LOADER_CACHE_SIZE
from signoff.database import SessionMaker
from signoff.models import (
    Actor,
    Approval,
    DeadLetter,
    DeliveryAttempt,
    Draft,
    HumanTask,
    Proposal,
    ProposalRevision,
    Queue,
    RepairAction,
    Target,
)
from signoff.models.records import RowsWhere, Via, read_all, rows_where


class Reads(Protocol):
    """Where loaders read: a request's read session (``Context.read``)."""

    def read(self) -> AbstractAsyncContextManager[AsyncSession]: ...


M = TypeVar("M", bound=SQLModel)
K = TypeVar("K")
T = TypeVar("T")
R = TypeVar("R")


class Loaders:
    def __init__(self, context: Reads) -> None:
        self._context = context
        self.actor = self._by_id(Actor)
        self.queue = self._by_id(Queue)
        self.target = self._by_id(Target)
        self.proposal = self._by_id(Proposal)
        self.task = self._by_id(HumanTask)
        self.task_by_proposal = self._one_by(HumanTask, "proposal_id")
        self.approvals_by_proposal = self._many_by(Approval, "proposal_id", "created_at")
        self.revisions_by_proposal = self._many_by(ProposalRevision, "proposal_id", "revision")
        # Attempt ids are UUIDv7, so id order is the order they were recorded in.
        self.attempts_by_proposal = self._many_by(DeliveryAttempt, "proposal_id", "id")
        self.dead_letters_by_incident = self._many_by(DeadLetter, "incident_id", "id")
        self.repairs_by_incident = self._many_by(RepairAction, "incident_id", "id")

    def _by_id(self, model: type[M]) -> RowLoader[M | None]:
        return self._one_by(model, "id")

    def _one_by(self, model: type[M], column: str) -> RowLoader[M | None]:
        return RowLoader(self._context, RowsWhere(model, column, ()), many=False)

    def _many_by(self, model: type[M], column: str, order_by: str) -> RowLoader[list[M]]:
        return RowLoader(self._context, RowsWhere(model, column, (), order_by), many=True)


class RowLoader(DataLoader[str, T], Generic[T]):
    """Records by one column: a row (or None) per key, or with ``many`` the rows of each
    key in ``kind.order_by`` order."""

    def __init__(self, context: Reads, kind: RowsWhere, *, many: bool) -> None:
        cache = _Futures()
        # A function of what it reads, not a method: a loader holding a method of itself
        # would be a reference cycle, and every row it loaded would wait for the cyclic
        # garbage collector instead of going with the request.
        super().__init__(load_fn=functools.partial(_load, context, kind, many), cache_map=cache)
        # The cache's futures by key, which ``now_or_later`` and ``prime_loaded`` use as is.
        self.futures = cache.futures
        self.kind = kind
        self._many = many
        # now_or_later's conversions of loaded values, by (key, conversion).
        self.converted: dict[tuple[str, Callable[[Any], Any]], tuple[Future[Any], Any]] = {}

    def read(self, keys: Sequence[str]) -> RowsWhere:
        return _read(self.kind, keys)

    def values(self, keys: Sequence[str], rows: list[Any]) -> list[T]:
        """Each key's value among ``rows`` (read by ``read(keys)``)."""
        return _values(self.kind, self._many, keys, rows)

    def prime_loaded(self, values: Mapping[str, T]) -> None:
        """``prime_many(values)``: each key not in the cache gets a finished future of its
        value, made here without the cache's and the loop's per-key calls. A batch not sent
        yet may wait on some of these keys: ``prime_many`` answers those."""
        batch = self.batch
        if batch is not None and not batch.dispatched:
            self.prime_many(values)
            return
        futures = self.futures
        loop = self.loop
        for key, value in values.items():
            if key not in futures:
                future: Future[T] = Future(loop=loop)
                future.set_result(value)
                futures[key] = future


def _read(kind: RowsWhere, keys: Sequence[str]) -> RowsWhere:
    return RowsWhere(kind.model, kind.column, keys, kind.order_by)


def _values(kind: RowsWhere, many: bool, keys: Sequence[str], rows: list[Any]) -> list[Any]:
    column = kind.column
    if many:
        groups: dict[Any, list[Any]] = defaultdict(list)
        for row in rows:
            groups[getattr(row, column)].append(row)
        return [groups[key] for key in keys]
    by_key = {getattr(row, column): row for row in rows}
    return [by_key.get(key) for key in keys]


async def _load(context: Reads, kind: RowsWhere, many: bool, keys: list[str]) -> list[Any]:
    """A ``RowLoader``'s batch: the values of ``keys``."""
    async with context.read() as session:
        (rows,) = await read_all(session, [_read(kind, keys)])
    return _values(kind, many, keys, rows)


class _Futures(AbstractCache[str, Any]):
    """DataLoader's default cache, keyed by the key itself, its dictionary in sight."""

    def __init__(self) -> None:
        self.futures: dict[str, Future[Any]] = {}

    def get(self, key: str) -> Future[Any] | None:
        return self.futures.get(key)

    def set(self, key: str, value: Future[Any]) -> None:
        self.futures[key] = value

    def delete(self, key: str) -> None:
        del self.futures[key]

    def clear(self) -> None:
        self.futures.clear()


@dataclass(frozen=True)
class Reached:
    """The rows of ``loader``'s kind that ``via`` reaches from ``keys`` (the approvers of
    proposals), read together with the reads they would otherwise wait for."""

    loader: RowLoader[Any]
    keys: Iterable[str]
    via: Via


async def warm(context: Reads, *wanted: tuple[RowLoader[Any], Iterable[str]] | Reached) -> None:
    """Load each loader's keys not loaded yet, now and together (one round trip on
    PostgreSQL), so that ``now_or_later`` finds them."""
    reads: list[RowsWhere] = []
    primes: list[Callable[[list[Any]], None]] = []
    for each in wanted:
        if isinstance(each, Reached):
            keys = list(dict.fromkeys(each.keys))
            if keys:
                reads.append(replace(each.loader.read(keys), via=each.via))
                primes.append(functools.partial(_prime_reached, each.loader))
            continue
        loader, wanted_keys = each
        futures = loader.futures
        missing = [key for key in dict.fromkeys(wanted_keys) if key not in futures]
        if missing:
            reads.append(loader.read(missing))
            primes.append(functools.partial(_prime, loader, missing))
    if not reads:
        return
    async with context.read() as session:
        found = await read_all(session, reads)
    for prime, rows in zip(primes, found, strict=True):
        prime(rows)


def prime_read(wanted: tuple[RowLoader[Any], Iterable[str]] | Reached, rows: list[Any]) -> None:
    """What ``warm`` does with the rows it read, for ``rows`` read for every one of
    ``wanted``'s keys in another read (along a page: ``signoff.models.records.Along``)."""
    if isinstance(wanted, Reached):
        _prime_reached(wanted.loader, rows)
    else:
        loader, keys = wanted
        _prime(loader, list(dict.fromkeys(keys)), rows)


def _prime(loader: RowLoader[Any], keys: list[str], rows: list[Any]) -> None:
    loader.prime_loaded(dict(zip(keys, loader.values(keys, rows), strict=True)))


def _prime_reached(loader: RowLoader[Any], rows: list[Any]) -> None:
    column = loader.kind.column
    loader.prime_loaded({getattr(row, column): row for row in rows})


def now_or_later(loader: RowLoader[T], key: str, convert: Callable[[T], R]) -> R | Awaitable[R]:
    """``convert`` of ``key``'s value: at once if it is loaded, else when it loads.

    A value is converted once per request and kind of conversion: twenty proposals of
    one target share one ``Target``, as its record is the same for all of them.
    """
    future = loader.futures.get(key)
    if future is not None:
        # Kept with the future it converted: a key cleared or primed again converts anew.
        memo = loader.converted.get((key, convert))
        if memo is not None and memo[0] is future:
            return cast(R, memo[1])
        if future.done() and not future.cancelled() and future.exception() is None:
            value = convert(future.result())
            loader.converted[(key, convert)] = (future, value)
            return value
    return _converted(loader.load(key), convert)


@dataclass(frozen=True, slots=True)
class LoadedRelation(Generic[T, R]):
    """A relation answered from one of a request's loaders: ``convert`` of the value of
    ``key(source)`` (no key: null), at once where it is loaded (``now_or_later``).

    ``loaded_field`` makes it a field whose resolver is ``answer`` with the context of
    Strawberry's ``Info``; the served executor calls ``answer`` with the execution's
    context and makes no ``Info`` (``schema.serving.execution``)."""

    loader: Callable[[Loaders], RowLoader[T]]
    key: Callable[[Any], str | None]
    convert: Callable[[T], R]

    def answer(self, source: Any, context: Any) -> R | Awaitable[R] | None:
        key = self.key(source)
        if key is None:
            return None
        return now_or_later(self.loader(context.loaders), key, self.convert)


# The relation each resolver made by ``loaded_field`` answers.
_LOADED: dict[Callable[..., Any], LoadedRelation[Any, Any]] = {}


def loaded_field(relation: LoadedRelation[Any, Any], **options: Any) -> Any:
    """A Strawberry field (``options`` as ``strawberry.field`` takes them) answering
    ``relation`` of the object that holds it."""

    def resolve(self: Any, info: strawberry.Info) -> Any:
        return relation.answer(self, info.context)

    _LOADED[resolve] = relation
    return strawberry.field(resolver=resolve, **options)


def loaded_relation(resolver: object) -> LoadedRelation[Any, Any] | None:
    """The relation ``resolver`` answers, if ``loaded_field`` made it."""
    return _LOADED.get(resolver) if callable(resolver) else None


async def _converted(pending: Awaitable[T], convert: Callable[[T], R]) -> R:
    return convert(await pending)


class _LRUCache(AbstractCache[K, T]):
    """A bounded DataLoader cache: a process-wide loader must not grow without bound."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._entries: OrderedDict[K, Future[T]] = OrderedDict()

    def get(self, key: K) -> Future[T] | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def set(self, key: K, value: Future[T]) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.maxsize:
            self._entries.popitem(last=False)

    def delete(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()


class FeedLoaders:
    """Process-wide loaders for the objects change events point at.

    Keyed by (id, cursor): every subscriber that receives one event shares one
    query for its object, and a later event reloads the object's newer state.
    """

    def __init__(self, sessionmaker: SessionMaker) -> None:
        self._sessionmaker = sessionmaker
        self.proposal = self._at(Proposal)
        self.task = self._at(HumanTask)
        self.draft = self._at(Draft)

    def _at(self, model: type[M]) -> DataLoader[tuple[str, int], M | None]:
        async def load(keys: list[tuple[str, int]]) -> list[M | None]:
            ids = sorted({key[0] for key in keys})
            async with self._sessionmaker() as session:
                found = await rows_where(session, model, "id", ids)
            rows = {row.id: row for row in found}  # type: ignore[attr-defined]
            return [rows.get(key[0]) for key in keys]

        return DataLoader(load_fn=load, cache_map=_LRUCache(FEED_LOADER_CACHE_SIZE))
