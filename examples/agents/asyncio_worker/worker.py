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
from signoff_client.targets import TargetNeeds, TargetNotReady, register_target, require_target

REFUND = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}
# What this recipe needs of its target (README.md says it in words): a reviewer deciding
# every refund, with no approval policy; amendments the agent accepts before they are
# decided; Signoff delivering what is approved to a url.
NEEDS = TargetNeeds(input_schema=REFUND)


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
        await require_target(signoff, target, NEEDS)
        for done in asyncio.as_completed([handle(signoff, target, t) for t in tickets]):
            print(await done, flush=True)


async def register(target: str, queue: str | None, url: str | None) -> None:
    """Register the target this recipe needs (SIGNOFF_TOKEN: an admin's token)."""
    async with AsyncSignoff.from_env() as signoff:
        print((await register_target(signoff, target, NEEDS, queue=queue, url=url)).line())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", nargs="?", choices=["register"], help="register its target")
    parser.add_argument("--target", required=True, help="the target's name")
    parser.add_argument("--queue", help="register: the slug of the queue reviewing it")
    parser.add_argument("--url", help="register: where approved refunds are delivered")
    parser.add_argument("--ticket", action="append", default=[], help="a ticket id")
    args = parser.parse_args()
    step = (
        register(args.target, args.queue, args.url) if args.step else main(args.target, args.ticket)
    )
    try:
        asyncio.run(step)
    except TargetNotReady as missing:
        raise SystemExit(missing.message) from None
