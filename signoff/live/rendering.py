"""Per-event execution: a group's selection executed for one change event, once, and
its ``payload`` encoded once for every member."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import strawberry
from graphql import DocumentNode, ExecutionResult
from graphql.execution import Executor

from signoff.constants import LIVE_SHARED_VALUES
from signoff.database import SessionMaker
from signoff.events.hub import Change
from signoff.internals import core_schema, execute_for_event
from signoff.live.prepared_frames import Payload
from signoff.live.selection import Selection
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.feed.subscriptions import Visibility
from signoff.schema.change_event import ChangeEvent
from signoff.schema.context import Context
from signoff.schema.errors import mask_error
from signoff.schema.loaders import FeedLoaders
from signoff.schema.serving.shared_values import ExecutionValues, SharedValues

logger = logging.getLogger("signoff.live")

FAILED_FRAME = json.dumps(
    {"data": None, "errors": [{"message": "Unexpected error.", "extensions": {"code": "INTERNAL"}}]}
)


class Frames:
    """Executes one group's selection for an event and encodes the payload."""

    def __init__(
        self,
        executor: Executor[Any],
        make_context: Callable[[ExecutionValues], Context],
        shared: SharedValues,
    ) -> None:
        self._executor = executor
        self._make_context = make_context
        self._shared = shared
        self.executions = 0

    async def render(self, change: Change) -> Payload:
        """The encoded ``payload`` of the frame for ``change``; the session is closed first.
        A failure is the frame's error, never the group's end."""
        self.executions += 1
        try:
            return await self._render(change)
        except Exception as exc:
            logger.error("rendering a frame failed: %s", type(exc).__name__)
            return Payload(FAILED_FRAME, change.cursor)

    async def _render(self, change: Change) -> Payload:
        values = self._shared.for_execution(self)
        context = self._make_context(values)
        try:
            outcome: Any = execute_for_event(
                self._executor, ChangeEvent.from_change(change), context
            )
            is_awaitable = self._executor.is_awaitable(outcome)
            result: ExecutionResult = await outcome if is_awaitable else outcome
        finally:
            await context.close()
        payload: dict[str, Any] = {"data": result.data}
        if result.errors:
            payload["errors"] = [mask_error(e, context.request_id).formatted for e in result.errors]
        else:
            values.keep(result.data)
        return Payload(json.dumps(payload, separators=(",", ":")), change.cursor)


class FrameMaker:
    """Builds the ``Frames`` of a group: one executor per group, contexts per event that
    read through the process's read sessions and shared feed loaders."""

    def __init__(self, schema: strawberry.Schema, read_sessionmaker: SessionMaker) -> None:
        self._schema = schema
        self._read_sessionmaker = read_sessionmaker
        self._feed_loaders = FeedLoaders(read_sessionmaker)
        self._shared = SharedValues(LIVE_SHARED_VALUES)

    def frames(
        self,
        selection: Selection,
        document: DocumentNode,
        viewer: Viewer | None,
        visibility: Visibility,
    ) -> Frames:
        """``viewer``: the one viewer a selection that reads it is executed for (``None``:
        shared by many, and reading the viewer is a bug, ``SharedViewerError``)."""
        executor = self._schema.execution_context_class.build(
            core_schema(self._schema),
            document,
            raw_variable_values=json.loads(selection.variables),
            operation_name=selection.operation_name,
        )
        assert not isinstance(executor, list)  # Strawberry validated the document already

        def make_context(values: ExecutionValues) -> Context:
            return Context(
                sessionmaker=self._read_sessionmaker,
                read_sessionmaker=self._read_sessionmaker,
                token=None,
                feed_loaders=self._feed_loaders,
                feed_visibility=visibility,
                shared_viewer=viewer is None,
                _viewer=viewer,
                shared_values=values,
            )

        return Frames(executor, make_context, self._shared)
