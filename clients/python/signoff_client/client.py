"""The clients: ``AsyncSignoff`` for asyncio code, ``Signoff`` for everything else (the same
operations, run on an event loop in a thread of its own)."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from contextlib import ExitStack
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from signoff_client.errors import NotFound, SignoffError
from signoff_client.executions import Recorded, execute, report_applied, report_failed, take
from signoff_client.generated.fragments import DraftFields
from signoff_client.generated.input_types import PrepareDraftInput, ProposeActionInput
from signoff_client.generated.targets import TargetsTargets
from signoff_client.generated.viewer import ViewerViewerActor
from signoff_client.keys import derive_key
from signoff_client.outcomes import Outcome
from signoff_client.proposals import Proposal
from signoff_client.transport import DEFAULT_RETRIES, GraphQLApi, Retries

T = TypeVar("T")

Target = TargetsTargets


class AsyncSignoff:
    """A Signoff server at ``url`` (``http://host:8000``), as the actor of ``token``."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        retries: Retries = DEFAULT_RETRIES,
        poll_interval: float = 2.0,
        timeout: float = 30.0,
        on_retry: Callable[[SignoffError, float], None] | None = None,
    ) -> None:
        self.url = url
        self.api = GraphQLApi(url, token, retries=retries, timeout=timeout, on_retry=on_retry)
        self.poll_interval = poll_interval
        self._targets: dict[str, Target] = {}

    @classmethod
    def from_env(cls, **options: Any) -> AsyncSignoff:
        """The server named by ``SIGNOFF_URL`` with the token in ``SIGNOFF_TOKEN``."""
        return cls(os.environ["SIGNOFF_URL"], os.environ["SIGNOFF_TOKEN"], **options)

    async def __aenter__(self) -> AsyncSignoff:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.api.http.aclose()

    async def viewer(self) -> ViewerViewerActor:
        """Who the token belongs to (its name and role)."""
        return (await self.api.viewer()).viewer.actor

    async def targets(self) -> list[Target]:
        """Every target, with its input JSON Schema."""
        targets = (await self.api.targets()).targets
        self._targets = {t.name: t for t in targets} | {t.id: t for t in targets}
        return targets

    async def target(self, name_or_id: str) -> Target:
        """One target by its name or id (``NotFound`` if there is none)."""
        if name_or_id not in self._targets:
            await self.targets()
        try:
            return self._targets[name_or_id]
        except KeyError:
            raise NotFound(f"No target named {name_or_id!r}.") from None

    async def propose(
        self,
        target: str,
        payload: dict[str, Any],
        *,
        subject: Any,
        key: str | None = None,
        action: str | None = None,
        expires_in: int | None = None,
        preconditions: dict[str, Any] | None = None,
    ) -> Proposal:
        """Propose ``payload`` to ``target`` (its name or id); the handle's ``wait`` gives
        the decision. ``key`` defaults to one derived from the content, so the same call
        made again (after a crash) answers with the same proposal."""
        found = await self.target(target)
        action = action or found.name
        key = key or derive_key(target=found.id, action=action, subject=subject, payload=payload)
        # Read before proposing, so following from here replays every event of the proposal.
        cursor = (await self.api.feed_cursor()).change_feed_cursor
        answer = await self.api.propose_action(
            input=ProposeActionInput(
                targetId=found.id,
                actionCode=action,
                payload=payload,
                operationKey=key,
                subject=subject,
                preconditions=preconditions,
                expiresInSeconds=expires_in,
            )
        )
        made = answer.propose_action
        return Proposal(self, made.proposal, cursor, replayed=made.replayed)

    async def proposal(self, proposal_id: str) -> Proposal:
        """A handle on a proposal made earlier (by this agent)."""
        answer = await self.api.get_proposal(id=proposal_id)
        return Proposal(self, answer.proposal, answer.change_feed_cursor)

    async def execute(
        self,
        proposal: Proposal,
        function: Callable[..., Any],
        *,
        timeout: float | None = None,  # noqa: ASYNC109
        lease_seconds: int | None = None,
    ) -> Any:
        """See ``signoff_client.execute``: ``function`` runs once for this approval."""
        return await execute(proposal, function, timeout=timeout, lease_seconds=lease_seconds)

    async def prepare_draft(
        self,
        *,
        request_id: str,
        session_id: str,
        account_id: str,
        owner: dict[str, Any],
        values: dict[str, Any] | None = None,
    ) -> DraftFields:
        """Prepare a draft for a person (``request_id`` replays; see the Drafts page)."""
        answer = await self.api.prepare_draft(
            input=PrepareDraftInput(
                requestId=request_id,
                sessionId=session_id,
                accountId=account_id,
                owner=owner,
                values=values,
            )
        )
        return answer.prepare_draft.draft

    async def draft(self, draft_id: str, session_id: str) -> DraftFields:
        """One of this agent's drafts, as it is now."""
        return (await self.api.get_draft(id=draft_id, session_id=session_id)).draft


class SyncProposal:
    """``Proposal`` for synchronous code."""

    def __init__(self, portal: BlockingPortal, proposal: Proposal) -> None:
        self._portal = portal
        self.proposal = proposal

    @property
    def id(self) -> str:
        return self.proposal.id

    @property
    def replayed(self) -> bool:
        return self.proposal.replayed

    def wait(self, timeout: float | None = None) -> Outcome:
        """See ``Proposal.wait``."""
        return self._portal.call(self.proposal.wait, timeout)

    def execute(
        self,
        function: Callable[..., Any],
        *,
        timeout: float | None = None,
        lease_seconds: int | None = None,
    ) -> Any:
        """See ``signoff_client.execute``; ``function`` runs in the calling thread."""
        taken = self._portal.call(
            lambda: take(self.proposal, timeout=timeout, lease_seconds=lease_seconds)
        )
        if isinstance(taken, Recorded):
            return taken.result
        try:
            returned = function(**taken.payload)
        except BaseException as exc:
            self._portal.call(report_failed, self.proposal, taken, exc)
            raise
        self._portal.call(report_applied, self.proposal, taken, returned)
        return returned

    def accept_amendment(self, payload_digest: str | None = None) -> SyncProposal:
        """See ``Proposal.accept_amendment``."""
        self._portal.call(self.proposal.accept_amendment, payload_digest)
        return self


class Signoff:
    """``AsyncSignoff`` for synchronous code: each call runs on a private event loop."""

    def __init__(self, url: str, token: str, **options: Any) -> None:
        self._stack = ExitStack()
        self._portal = self._stack.enter_context(start_blocking_portal())
        self.aio: AsyncSignoff = self._portal.call(lambda: _make(url, token, options))

    @classmethod
    def from_env(cls, **options: Any) -> Signoff:
        """The server named by ``SIGNOFF_URL`` with the token in ``SIGNOFF_TOKEN``."""
        return cls(os.environ["SIGNOFF_URL"], os.environ["SIGNOFF_TOKEN"], **options)

    def __enter__(self) -> Signoff:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._portal.call(self.aio.aclose)
        self._stack.close()

    def run(self, call: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run a coroutine of ``self.aio`` on the client's loop and return its result."""
        result: T = self._portal.call(call)
        return result

    def viewer(self) -> ViewerViewerActor:
        return self.run(self.aio.viewer)

    def targets(self) -> list[Target]:
        return self.run(self.aio.targets)

    def propose(
        self, target: str, payload: dict[str, Any], *, subject: Any, **options: Any
    ) -> SyncProposal:
        """See ``AsyncSignoff.propose``."""
        made = self.run(lambda: self.aio.propose(target, payload, subject=subject, **options))
        return SyncProposal(self._portal, made)

    def proposal(self, proposal_id: str) -> SyncProposal:
        return SyncProposal(self._portal, self.run(lambda: self.aio.proposal(proposal_id)))

    def prepare_draft(self, **options: Any) -> DraftFields:
        return self.run(lambda: self.aio.prepare_draft(**options))

    def draft(self, draft_id: str, session_id: str) -> DraftFields:
        return self.run(lambda: self.aio.draft(draft_id, session_id))


async def _make(url: str, token: str, options: dict[str, Any]) -> AsyncSignoff:
    """Made on the portal's loop, so its HTTP client belongs to that loop."""
    return AsyncSignoff(url, token, **options)
