"""DataLoaders: nested fields cost one query per kind of object, not one per row."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from sqlmodel import SQLModel, col, select
from strawberry.dataloader import DataLoader

from signoff.models import Actor, Approval, DeliveryAttempt, HumanTask, Proposal, Queue, Target

if TYPE_CHECKING:
    from signoff.schema.context import Context

M = TypeVar("M", bound=SQLModel)


class Loaders:
    def __init__(self, context: Context) -> None:
        self._context = context
        self.actor = self._by_id(Actor)
        self.queue = self._by_id(Queue)
        self.target = self._by_id(Target)
        self.proposal = self._by_id(Proposal)
        self.task = self._by_id(HumanTask)
        self.task_by_proposal = self._one_by(HumanTask, "proposal_id")
        self.approvals_by_proposal = self._many_by(Approval, "proposal_id", "created_at")
        # Attempt ids are UUIDv7, so id order is the order they were recorded in.
        self.attempts_by_proposal = self._many_by(DeliveryAttempt, "proposal_id", "id")

    async def _fetch(
        self, model: type[M], column: str, keys: Sequence[str], order_by: str | None = None
    ) -> list[M]:
        stmt = select(model).where(col(getattr(model, column)).in_(keys))
        if order_by is not None:
            stmt = stmt.order_by(col(getattr(model, order_by)))
        async with self._context.db() as session:
            return list((await session.exec(stmt)).all())

    def _by_id(self, model: type[M]) -> DataLoader[str, M | None]:
        async def load(keys: list[str]) -> list[M | None]:
            rows = {row.id: row for row in await self._fetch(model, "id", keys)}  # type: ignore[attr-defined]
            return [rows.get(key) for key in keys]

        return DataLoader(load_fn=load)

    def _one_by(self, model: type[M], column: str) -> DataLoader[str, M | None]:
        async def load(keys: list[str]) -> list[M | None]:
            rows = {getattr(row, column): row for row in await self._fetch(model, column, keys)}
            return [rows.get(key) for key in keys]

        return DataLoader(load_fn=load)

    def _many_by(self, model: type[M], column: str, order_by: str) -> DataLoader[str, list[M]]:
        async def load(keys: list[str]) -> list[list[M]]:
            groups: dict[Any, list[M]] = defaultdict(list)
            for row in await self._fetch(model, column, keys, order_by):
                groups[getattr(row, column)].append(row)
            return [groups[key] for key in keys]

        return DataLoader(load_fn=load)
