"""An asyncio agent process for the tests: a decorated coroutine whose rejection is
returned, then a proposal followed to its decision; its lines printed as JSON. Run with
SIGNOFF_URL and SIGNOFF_TOKEN set and the target's name as argument."""

from __future__ import annotations

import asyncio
import json
import sys

from signoff_client import AsyncSignoff, requires_approval

TARGET = sys.argv[1]


@requires_approval(target=TARGET, on_reject="return")
async def refund(amount: int, currency: str) -> str:
    return f"refunded {amount} {currency}"


async def main() -> None:
    print(json.dumps({"result": await refund(120, "EUR")}), flush=True)
    async with AsyncSignoff.from_env() as signoff:
        proposal = await signoff.propose(
            TARGET, {"amount": 5, "currency": "EUR"}, subject={"order": "o-2"}
        )
        print(json.dumps({"proposed": proposal.id}), flush=True)
        outcome = await proposal.wait(timeout=30)
        print(json.dumps({"outcome": outcome.kind}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
