"""A plain asyncio agent worker: for each support ticket, a model plans a refund; the
worker proposes it to Signoff and acts on the decision (an amendment is accepted, then
waited on like the rest).

The model is a scripted stand-in (``plan``), so the recipe runs with no network and no
key; put a real model call in its place. Run it with SIGNOFF_URL and SIGNOFF_TOKEN (an
agent's token) set; see README.md here.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from signoff_client import Amended, Applied, Approved, AsyncSignoff, Outcome


def plan(ticket: str) -> dict[str, Any]:
    """The model's stand-in: the refund it would propose for a ticket."""
    amount = 40 + 10 * sum(map(ord, ticket)) % 90
    return {"amount": amount, "currency": "EUR"}


async def handle(signoff: AsyncSignoff, target: str, ticket: str) -> str:
    """Propose the ticket's refund and follow it to its end; one line of what happened."""
    proposal = await signoff.propose(target, plan(ticket), subject={"ticket": ticket})
    outcome: Outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Amended):
        await proposal.accept_amendment(outcome.payload_digest)
        outcome = await proposal.wait(timeout=3600)
    if isinstance(outcome, Approved):
        outcome = await proposal.wait(timeout=600)  # Signoff delivers it: Applied or Failed
    amount = proposal.state.payload["amount"]
    if isinstance(outcome, Applied):
        return f"{ticket}: refund of {amount} EUR applied"
    return f"{ticket}: {outcome.kind}"


async def main(target: str, tickets: list[str]) -> None:
    async with AsyncSignoff.from_env() as signoff:
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--ticket", action="append", required=True, help="a ticket id")
    args = parser.parse_args()
    asyncio.run(main(args.target, args.ticket))
