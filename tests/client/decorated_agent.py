"""An agent process for the tests: one ``@requires_approval`` call, its lines printed as
JSON. Run with SIGNOFF_URL and SIGNOFF_TOKEN set and the target's name as argument."""

from __future__ import annotations

import json
import sys

from signoff_client import requires_approval


@requires_approval(target=sys.argv[1])
def refund(amount: int, currency: str) -> str:
    print(json.dumps({"ran": {"amount": amount, "currency": currency}}), flush=True)
    return f"refunded {amount} {currency}"


if __name__ == "__main__":
    print(json.dumps({"started": True}), flush=True)
    print(json.dumps({"result": refund(120, "EUR")}), flush=True)
