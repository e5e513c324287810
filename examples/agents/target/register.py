"""Register the target a recipe in examples/agents needs, once: a target of that name
already there is used as it is. Run it with SIGNOFF_URL and SIGNOFF_TOKEN set to an
admin's token (an agent may not register targets); see each recipe's README.md.

A recipe's target is its own, not the worked example's ``refunds``: that one's ``small``
rule approves refunds up to 100 with no person, and its agents need not accept an
amendment, while the recipes' flows rely on a reviewer deciding every refund (one
approval) and on the agent accepting an amendment before it is delivered.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import httpx

TARGETS = "query { targets { id name } }"
QUEUES = "query { queues { id slug } }"
REGISTER = """mutation($input: RegisterTargetInput!) {
  registerTarget(input: $input) { target { id name } signingSecret }
}"""
REFUND = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "minimum": 1}, "currency": {"type": "string"}},
    "required": ["amount", "currency"],
}


def gql(client: httpx.Client, query: str, variables: dict[str, Any] | None = None) -> Any:
    answer = client.post("/graphql", json={"query": query, "variables": variables or {}})
    answer.raise_for_status()
    body = answer.json()
    if body.get("errors"):
        raise SystemExit(body["errors"][0]["message"])
    return body["data"]


def ensure(client: httpx.Client, name: str, queue: str, url: str) -> str:
    """The line saying what was done: the target found, or registered (its secret shown)."""
    if any(target["name"] == name for target in gql(client, TARGETS)["targets"]):
        return f"{name}: already registered"
    queues = {found["slug"]: found["id"] for found in gql(client, QUEUES)["queues"]}
    if queue not in queues:
        raise SystemExit(f"no queue {queue!r}")
    settings = {
        "name": name,
        "url": url,
        "approvalMode": "HUMAN",
        "queueId": queues[queue],
        "inputSchema": REFUND,
        "requiredApprovals": 1,  # a reviewer decides every refund: no approval policy
        "amendable": True,
        "amendmentsNeedProposer": True,  # the agent accepts an amendment before delivery
    }
    registered = gql(client, REGISTER, {"input": settings})["registerTarget"]
    return f"{name}: registered, signing secret {registered['signingSecret']}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the target's name, e.g. recipe-langgraph")
    parser.add_argument("--queue", required=True, help="the slug of the queue reviewing it")
    parser.add_argument("--url", required=True, help="where approved refunds are delivered")
    args = parser.parse_args()
    headers = {"Authorization": f"Bearer {os.environ['SIGNOFF_TOKEN']}"}
    with httpx.Client(base_url=os.environ["SIGNOFF_URL"], headers=headers, timeout=30) as client:
        print(ensure(client, args.name, args.queue, args.url))
