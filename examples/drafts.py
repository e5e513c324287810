"""Drafts, end to end: an agent prepares, the person edits and reserves, an executor sends.

Run it against a running ``signoff serve`` (see docs/drafts.md, "Drafts")::

    python examples/drafts.py --url http://127.0.0.1:8000 \\
        --agent-token "$AGENT" --person-token "$PERSON" \\
        --integration-token "$EXECUTOR" --account-id "$ACCOUNT"

Each option can come from the environment instead:

* ``SIGNOFF_URL``: the server's base URL (default ``http://127.0.0.1:8000``)
* ``SIGNOFF_AGENT_TOKEN``: a token of an ``agent``; it prepares and edits the draft
* ``SIGNOFF_PERSON_TOKEN``: a token of the person the draft is for (any role)
* ``SIGNOFF_INTEGRATION_TOKEN``: a token of an ``integration``; the executor that sends
* ``SIGNOFF_ACCOUNT_ID``: the person's account id (``query { viewer { actor { id } } }``
  with the person's token)

Every run fills in a new expense claim (``--claim``, random by default): a claim that
was submitted once can never be drafted again. The script prints one line per step. Some
steps are refused on purpose, to show a guarantee; it names the code it expects. Any
other GraphQL error (or an expected refusal that does not come) ends the script with
exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import Any

import httpx

DRAFT = """
  draft {
    id status revision values valuesDigest updatedByUser cancelReason receipt
    reservation { operationKey valuesDigest }
  }
  replayed
"""
PREPARE = f"mutation($input: PrepareDraftInput!) {{ prepareDraft(input: $input) {{ {DRAFT} }} }}"
UPDATE = f"mutation($input: UpdateDraftInput!) {{ updateDraft(input: $input) {{ {DRAFT} }} }}"
RESERVE = f"mutation($input: ReserveDraftInput!) {{ reserveDraft(input: $input) {{ {DRAFT} }} }}"
OBSERVE = f"mutation($input: ObserveDraftInput!) {{ observeDraft(input: $input) {{ {DRAFT} }} }}"
CHECK = """
mutation($input: CheckDraftDispatchInput!) {
  checkDraftDispatch(input: $input) { allowed managed }
}
"""


class Failed(Exception):
    """The server answered something this walk-through did not expect."""


class Refused(Exception):
    """A GraphQL error: the server refused the request and changed nothing."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        first = errors[0]
        self.code = str((first.get("extensions") or {}).get("code"))
        self.extensions: dict[str, Any] = first.get("extensions") or {}
        super().__init__(f"{self.code}: {first.get('message')}")


class Signoff:
    """One actor's view of the GraphQL API: its token on every request."""

    def __init__(self, http: httpx.Client, token: str) -> None:
        self.http = http
        self.token = token

    def send(self, query: str, input: dict[str, Any]) -> dict[str, Any]:
        """Run one mutation; its root field's answer, or ``Refused``."""
        response = self.http.post(
            "/graphql",
            json={"query": query, "variables": {"input": input}},
            headers={"Authorization": f"Bearer {self.token}"},
        )
        if response.status_code != 200:
            raise Failed(f"HTTP {response.status_code}: {response.text}")
        body: dict[str, Any] = response.json()
        if body.get("errors"):
            raise Refused(body["errors"])
        (answer,) = body["data"].values()
        result: dict[str, Any] = answer
        return result

    def refused(self, code: str, query: str, input: dict[str, Any]) -> Refused:
        """Run one mutation that must be refused with ``code``."""
        try:
            self.send(query, input)
        except Refused as refusal:
            if refusal.code != code:
                raise
            return refusal
        raise Failed(f"expected {code}, but the request was accepted")


def show(step: str, text: str) -> None:
    print(f"{step:<44} {text}", flush=True)


def shown(value: Any) -> str:
    """JSON with sorted keys: PostgreSQL keeps an object's keys in an order of its own."""
    return json.dumps(value, sort_keys=True)


def state(draft: dict[str, Any], field: str | None = None) -> str:
    """The draft's status and revision, and one of its fields."""
    text = f"{draft['status']} revision {draft['revision']}"
    return text if field is None else f"{text}, {field} {shown(draft[field])}"


def walk_through(
    *, agent: Signoff, person: Signoff, executor: Signoff, account_id: str, claim: str
) -> None:
    session_id = f"chat-{claim}"  # the conversation the agent works in
    owner = {"kind": "FORM", "form": f"expense-claim/{claim}", "step": "submit"}
    owner["accountId"] = account_id
    values = {"payee": "Ada Lovelace", "amount": 120, "currency": "EUR", "note": "Train"}

    # 1. The agent prepares the draft. The same requestId again replays the answer.
    prepare = {
        "requestId": f"{claim}-prepare",
        "sessionId": session_id,
        "accountId": account_id,
        "owner": owner,
        "values": values,
    }
    draft = agent.send(PREPARE, prepare)["draft"]
    draft_id, agent_saw = draft["id"], draft["revision"]
    if draft["status"] != "DRAFT":  # a replay: this claim's walk-through ran before
        raise Failed(f"claim {claim} was drafted before ({state(draft)}); pick another --claim")
    show("1. agent prepares", state(draft, "values"))
    again = agent.send(PREPARE, prepare)
    if not again["replayed"] or again["draft"]["id"] != draft_id:
        raise Failed(f"the same requestId did not replay: {again}")
    show("   the same request again", "replayed: the same draft")
    changed_request = {**prepare, "values": {**values, "amount": 9}}
    other = agent.refused("REQUEST_CONFLICT", PREPARE, changed_request)
    show("   another request, same requestId", f"refused {other.code}")

    # 2. The person corrects the amount. The field is now theirs.
    draft = person.send(
        UPDATE,
        {
            "requestId": f"{claim}-person-edit",
            "draftId": draft_id,
            "sessionId": session_id,
            "expectedRevision": draft["revision"],
            "source": "USER",
            "patch": {"amount": 112},
        },
    )["draft"]
    reviewed_digest = draft["valuesDigest"]  # what the person's screen shows now
    show("2. person edits amount", state(draft, "updatedByUser"))

    # 3. The agent, still at the revision it prepared, tries to change amount and note.
    agent_edit = {
        "requestId": f"{claim}-agent-edit",
        "draftId": draft_id,
        "sessionId": session_id,
        "expectedRevision": agent_saw,
        "source": "AGENT",
        "patch": {"amount": 150, "note": "Train to Bristol"},
    }
    stale = agent.refused("STALE_REVISION", UPDATE, agent_edit)
    current = stale.extensions.get("revision", draft["revision"])
    show(f"3. agent edits at revision {agent_saw}", f"refused {stale.code} (now at {current})")
    draft = agent.send(
        UPDATE, {**agent_edit, "requestId": f"{claim}-agent-edit-2", "expectedRevision": current}
    )["draft"]
    if draft["values"]["amount"] != 112:
        raise Failed(f"the agent's patch overwrote the person's amount: {draft['values']}")
    show("   agent edits again, at the revision", state(draft, "values"))

    # 4. The person reserves. Naming the digest seen before the agent's edit is refused.
    reserve = {
        "requestId": f"{claim}-reserve",
        "draftId": draft_id,
        "sessionId": session_id,
        "expectedRevision": draft["revision"],
        "valuesDigest": reviewed_digest,
    }
    changed = person.refused("VALUES_CHANGED", RESERVE, reserve)
    show("4. person reserves what they saw before", f"refused {changed.code}")
    reserve = {**reserve, "requestId": f"{claim}-reserve-2", "valuesDigest": draft["valuesDigest"]}
    draft = person.send(RESERVE, reserve)["draft"]
    reservation = draft["reservation"]
    key = reservation["operationKey"]
    show("   person reserves the current values", f"{state(draft)}, operationKey {key}")

    # 5. The executor asks once before sending; a second ask is refused.
    check = {
        "owner": owner,
        "draftId": draft_id,
        "operationKey": reservation["operationKey"],
        "valuesDigest": reservation["valuesDigest"],
    }
    allowed = executor.send(CHECK, check)
    if not (allowed["allowed"] and allowed["managed"]):
        raise Failed(f"the dispatch check did not pass: {allowed}")
    show("5. executor checks dispatch", "allowed={allowed} managed={managed}".format(**allowed))
    consumed = executor.refused("DISPATCH_CONSUMED", CHECK, check)
    show("   executor checks again", f"refused {consumed.code}")

    # 6. The executor sends the claim, then reports. Receipts may grow, never shrink.
    observe = {
        "draftId": draft_id,
        "sessionId": session_id,
        "operationKey": reservation["operationKey"],
    }
    draft = executor.send(
        OBSERVE,
        {
            **observe,
            "requestId": f"{claim}-observe-partial",
            "expectedRevision": draft["revision"],
            "outcome": "PARTIAL",
            "receipt": {"claimId": f"EC-{claim}"},
        },
    )["draft"]
    show("6. executor observes PARTIAL", state(draft, "receipt"))
    finished = {
        **observe,
        "requestId": f"{claim}-observe-submitted",
        "expectedRevision": draft["revision"],
        "outcome": "SUBMITTED",
        "receipt": {"paidAt": "2025-01-31"},
    }
    shrunk = executor.refused("RECEIPT_CONFLICT", OBSERVE, finished)
    show("   a receipt without claimId", f"refused {shrunk.code}")
    finished = {**finished, "receipt": {"claimId": f"EC-{claim}", "paidAt": "2025-01-31"}}
    draft = executor.send(OBSERVE, {**finished, "requestId": f"{claim}-observe-submitted-2"})[
        "draft"
    ]
    show("   executor observes SUBMITTED", state(draft, "receipt"))
    if draft["status"] != "OBSERVED":
        raise Failed(f"the draft did not end OBSERVED: {draft}")
    print(f"done: draft {draft_id} OBSERVED; dispatch allowed once, then DISPATCH_CONSUMED")


def arguments(argv: list[str] | None) -> argparse.Namespace:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--url", default=env("SIGNOFF_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--agent-token", default=env("SIGNOFF_AGENT_TOKEN"))
    parser.add_argument("--person-token", default=env("SIGNOFF_PERSON_TOKEN"))
    parser.add_argument("--integration-token", default=env("SIGNOFF_INTEGRATION_TOKEN"))
    parser.add_argument("--account-id", default=env("SIGNOFF_ACCOUNT_ID"))
    parser.add_argument("--claim", default=uuid.uuid4().hex[:8], help="the expense claim's id")
    args = parser.parse_args(argv)
    for name in ("agent_token", "person_token", "integration_token", "account_id"):
        if not getattr(args, name):
            option = "--" + name.replace("_", "-")
            variable = "SIGNOFF_" + name.upper()
            parser.error(f"{option} (or {variable}) is required")
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    with httpx.Client(base_url=args.url, timeout=30) as http:
        try:
            walk_through(
                agent=Signoff(http, args.agent_token),
                person=Signoff(http, args.person_token),
                executor=Signoff(http, args.integration_token),
                account_id=args.account_id,
                claim=args.claim,
            )
        except (Refused, Failed, httpx.HTTPError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
