"""An agent process for the tests: one ``@requires_approval`` call, its lines printed as
JSON. Run with SIGNOFF_URL and SIGNOFF_TOKEN set, the target's name as argument and,
optionally, the call's key (without one, each run is a new proposal)."""

from __future__ import annotations

import json
import sys

from signoff_client import AlreadyExecuted, requires_approval

KEY = sys.argv[2] if len(sys.argv) > 2 else None


@requires_approval(target=sys.argv[1], key=None if KEY is None else (lambda *_: KEY))
def refund(amount: int, currency: str) -> str:
    print(json.dumps({"ran": {"amount": amount, "currency": currency}}), flush=True)
    return f"refunded {amount} {currency}"


if __name__ == "__main__":
    print(json.dumps({"started": True}), flush=True)
    try:
        print(json.dumps({"result": refund(120, "EUR")}), flush=True)
    except AlreadyExecuted as already:
        print(json.dumps({"already": already.state}), flush=True)
