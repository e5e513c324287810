"""A proposal as an agent holds it: its latest state, and ``wait`` for what comes next.

``wait`` follows ``proposalEvents`` over graphql-transport-ws from the last cursor it
saw (over Server-Sent Events where websockets are refused), so a dropped connection, a
server restart or a 4429 resumes where it left off with no event lost (the server replays
what came after the cursor). When neither gets through, it polls ``proposal(id)``
instead. Either way
the outcome is read off the proposal's state (``outcomes.implied_outcomes``), so a
repeated or skipped frame cannot change what an agent is told.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from signoff_client.errors import CursorExpired, StillWaiting
from signoff_client.generated.fragments import ProposalFields
from signoff_client.generated.input_types import AcceptAmendmentInput
from signoff_client.generated.proposal_events import ProposalEvents
from signoff_client.outcomes import FINAL_KINDS, Outcome, implied_outcomes
from signoff_client.transport import StreamInterrupted, WebsocketsUnavailable

if TYPE_CHECKING:
    from signoff_client.client import AsyncSignoff


@dataclass
class Proposal:
    """One proposal: ``wait`` for its next outcome, ``accept_amendment`` to go on."""

    client: AsyncSignoff
    state: ProposalFields
    cursor: str | None
    replayed: bool = False
    # Every change-feed event seen, by cursor: (cursor, kind), in the order received.
    events: list[tuple[str, str]] = field(default_factory=list)
    returned: list[Outcome] = field(default_factory=list)
    polling: bool = False

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def done(self) -> bool:
        """Whether an outcome that ends the proposal has been returned."""
        return any(outcome.kind in FINAL_KINDS for outcome in self.returned)

    def pending(self) -> Outcome | None:
        """The next outcome the current state implies that ``wait`` has not returned."""
        seen = {outcome.key for outcome in self.returned}
        for outcome in implied_outcomes(self.state):
            if outcome.key not in seen:
                return outcome
        return None

    async def wait(self, timeout: float | None = None) -> Outcome:  # noqa: ASYNC109
        """The next outcome not returned before: the decision, then (for an approved
        proposal) how its delivery ended; once a final one was returned, that one again
        at once. ``StillWaiting`` after ``timeout`` seconds."""
        outcome = self.pending()
        if outcome is None and self.done:
            # Nothing more will happen: the final outcome again, at once.
            return self.returned[-1]
        if outcome is None:
            try:
                async with asyncio.timeout(timeout):
                    outcome = await self._follow()
            except TimeoutError:
                raise StillWaiting(self.id, self.state.state.value) from None
        self.returned.append(outcome)
        return outcome

    async def refresh(self) -> ProposalFields:
        """Read the proposal as it is now."""
        answer = await self.client.api.get_proposal(id=self.id)
        self.state = answer.proposal
        return self.state

    async def accept_amendment(self, payload_digest: str | None = None) -> Proposal:
        """Accept the amended revision (its digest, by default the current one), so the
        proposal may be delivered once approved."""
        digest = payload_digest or self.state.payload_digest
        answer = await self.client.api.accept_amendment(
            input=AcceptAmendmentInput(
                proposalId=self.id,
                payloadDigest=digest,
                idempotencyKey=f"accept-{self.id}-{digest}"[:150],
            )
        )
        self.state = answer.accept_amendment.proposal
        return self

    async def _read(self, frames: AsyncIterator[ProposalEvents]) -> Outcome | None:
        """Read events until the state implies an outcome not yet returned (``None``: the
        stream ended first)."""
        async for frame in frames:
            event = frame.proposal_events
            self.cursor = event.cursor
            self.events.append((event.cursor, event.kind))
            if event.proposal is not None:
                self.state = event.proposal
            outcome = self.pending()
            if outcome is not None:
                return outcome
        return None

    async def _follow(self) -> Outcome:
        """Follow the proposal until its state implies an outcome not yet returned."""
        attempt = 0
        while True:
            if not self.polling:
                seen = len(self.events)
                try:
                    # Closed here, on this task, when we stop reading (see
                    # ``GraphQLApi.proposal_events``).
                    async with aclosing(
                        self.client.api.proposal_events(proposal_id=self.id, after=self.cursor)
                    ) as frames:
                        outcome = await self._read(frames)
                    if outcome is not None:
                        return outcome
                except StreamInterrupted:
                    # Back off longer only while reconnecting brings nothing new.
                    attempt = 1 if len(self.events) > seen else attempt + 1
                except CursorExpired:
                    self.cursor = (await self.client.api.feed_cursor()).change_feed_cursor
                    await self.refresh()
                except WebsocketsUnavailable:
                    self.polling = True
                    continue
                # Reconnect after a pause, resuming after the last cursor seen.
                await self.client.api.pause(attempt)
            else:
                await self.refresh()
                outcome = self.pending()
                if outcome is not None:
                    return outcome
                await asyncio.sleep(self.client.poll_interval)
            outcome = self.pending()
            if outcome is not None:
                return outcome
