"""Drafts: prepare, edit, reserve, dispatch exactly once, observe; every rule, over GraphQL."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from sqlmodel import col, update

from signoff import clock
from signoff.models import Draft, Role
from signoff.resolvers.drafts import drafts
from tests.conftest import requires_postgres
from tests.helpers import GraphQLClient

DRAFT = """
  id status revision values valuesDigest updatedByUser owner sessionId accountId
  expiresAt cancelReason reservation { operationKey valuesDigest } receipt ownerExecutionRef
"""


def _mutation(name: str, input_type: str) -> str:
    return (
        f"mutation($input: {input_type}!) "
        f"{{ {name}(input: $input) {{ replayed draft {{ {DRAFT} }} }} }}"
    )


PREPARE = _mutation("prepareDraft", "PrepareDraftInput")
UPDATE = _mutation("updateDraft", "UpdateDraftInput")
CANCEL = _mutation("cancelDraft", "CancelDraftInput")
RESERVE = _mutation("reserveDraft", "ReserveDraftInput")
OBSERVE = _mutation("observeDraft", "ObserveDraftInput")
CHECK = """
mutation($input: CheckDraftDispatchInput!) { checkDraftDispatch(input: $input) { allowed managed } }
"""


_requests = itertools.count()


def request_id() -> str:
    return f"r-{next(_requests)}-{uuid.uuid4().hex[:6]}"


@dataclass
class Cast:
    gql: GraphQLClient
    agent: str
    person: str
    person_id: str
    executor: str
    other: str  # another person

    def form(self, step: str = "1", **extra: Any) -> dict[str, Any]:
        return {
            "kind": "FORM",
            "form": "expense",
            "step": step,
            "accountId": self.person_id,
            **extra,
        }

    async def prepare(
        self,
        owner: dict[str, Any],
        values: Any = None,
        session: str = "s-1",
        rid: str | None = None,
    ) -> dict[str, Any]:
        variables = {
            "input": {
                "requestId": rid or request_id(),
                "sessionId": session,
                "accountId": self.person_id,
                "owner": owner,
                "values": values if values is not None else {"amount": 12},
            }
        }
        result: dict[str, Any] = (await self.gql(PREPARE, variables, self.agent))["prepareDraft"]
        return result

    async def prepare_raw(
        self, owner: dict[str, Any], values: Any = None, session: str = "s-1"
    ) -> dict[str, Any]:
        variables = {
            "input": {
                "requestId": request_id(),
                "sessionId": session,
                "accountId": self.person_id,
                "owner": owner,
                "values": values if values is not None else {"amount": 12},
            }
        }
        result: dict[str, Any] = await self.gql.raw(PREPARE, variables, self.agent)
        return result

    async def update(self, draft: dict[str, Any], token: str, source: str, **extra: Any) -> Any:
        return await self.gql.raw(
            UPDATE,
            {
                "input": {
                    "requestId": extra.pop("rid", None) or request_id(),
                    "draftId": draft["id"],
                    "sessionId": draft["sessionId"],
                    "expectedRevision": extra.pop("revision", draft["revision"]),
                    "source": source,
                    **extra,
                }
            },
            token,
        )

    async def reserve(self, draft: dict[str, Any], digest: str | None = None) -> dict[str, Any]:
        variables = {
            "input": {
                "requestId": request_id(),
                "draftId": draft["id"],
                "sessionId": draft["sessionId"],
                "expectedRevision": draft["revision"],
                "valuesDigest": digest or draft["valuesDigest"],
            }
        }
        result: dict[str, Any] = await self.gql.raw(RESERVE, variables, self.person)
        return result

    async def check(self, draft: dict[str, Any] | None, owner: dict[str, Any]) -> dict[str, Any]:
        variables: dict[str, Any] = {"input": {"owner": owner}}
        if draft is not None:
            variables["input"] |= {
                "draftId": draft["id"],
                "operationKey": draft["reservation"]["operationKey"],
                "valuesDigest": draft["reservation"]["valuesDigest"],
            }
        result: dict[str, Any] = await self.gql.raw(CHECK, variables, self.executor)
        return result

    async def observe(self, draft: dict[str, Any], outcome: str, **extra: Any) -> dict[str, Any]:
        variables = {
            "input": {
                "requestId": request_id(),
                "draftId": draft["id"],
                "sessionId": draft["sessionId"],
                "expectedRevision": draft["revision"],
                "operationKey": draft["reservation"]["operationKey"],
                "outcome": outcome,
                **extra,
            }
        }
        result: dict[str, Any] = await self.gql.raw(OBSERVE, variables, self.executor)
        return result

    async def reserved(self, owner: dict[str, Any], session: str = "s-1") -> dict[str, Any]:
        draft = (await self.prepare(owner, session=session))["draft"]
        body = await self.reserve(draft)
        reserved: dict[str, Any] = body["data"]["reserveDraft"]["draft"]
        return reserved


def code(body: dict[str, Any]) -> str:
    return str(body["errors"][0]["extensions"]["code"]) if body.get("errors") else "ok"


async def cast_of(gql: GraphQLClient) -> Cast:
    person = await gql.token(Role.REVIEWER, name=f"person-{uuid.uuid4().hex[:6]}")
    person_id = (await gql("{ viewer { actor { id } } }", {}, person))["viewer"]["actor"]["id"]
    return Cast(
        gql=gql,
        agent=await gql.token(Role.AGENT),
        person=person,
        person_id=person_id,
        executor=await gql.token(Role.INTEGRATION),
        other=await gql.token(Role.REVIEWER),
    )


async def test_the_same_request_id_replays_and_other_input_conflicts(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    first = await cast.prepare(cast.form(), rid="prep-1")
    assert first["replayed"] is False and first["draft"]["status"] == "DRAFT"
    again = await cast.prepare(cast.form(), rid="prep-1")
    assert again["replayed"] is True and again["draft"]["id"] == first["draft"]["id"]
    other = {
        "input": {
            "requestId": "prep-1",
            "sessionId": "s-1",
            "accountId": cast.person_id,
            "owner": cast.form(),
            "values": {"amount": 99},
        }
    }
    assert (await gql.error(PREPARE, other, cast.agent)).code == "REQUEST_CONFLICT"


async def test_an_agent_patch_never_overwrites_a_field_the_person_edited(
    gql: GraphQLClient,
) -> None:
    cast = await cast_of(gql)
    draft = (await cast.prepare(cast.form(), {"amount": 12, "note": "agent"}))["draft"]
    body = await cast.update(draft, cast.person, "USER", patch={"amount": 15})
    draft = body["data"]["updateDraft"]["draft"]
    assert draft["updatedByUser"] == ["amount"] and draft["revision"] == 2
    body = await cast.update(draft, cast.agent, "AGENT", patch={"amount": 99, "note": "v2"})
    draft = body["data"]["updateDraft"]["draft"]
    assert draft["values"] == {"amount": 15, "note": "v2"}
    body = await cast.update(draft, cast.agent, "AGENT", remove=["amount"])
    assert body["data"]["updateDraft"]["draft"]["values"]["amount"] == 15
    stale = await cast.update(draft, cast.person, "USER", patch={"x": 1}, revision=1)
    assert code(stale) == "STALE_REVISION"
    assert code(await cast.update(draft, cast.other, "USER", patch={"x": 1})) == "ACCOUNT_MISMATCH"


async def test_a_reserve_with_a_stale_digest_fails_and_dispatch_passes_once(
    gql: GraphQLClient,
) -> None:
    cast = await cast_of(gql)
    draft = (await cast.prepare(cast.form()))["draft"]
    assert code(await cast.reserve(draft, digest="sha256:" + "0" * 64)) == "VALUES_CHANGED"
    body = await cast.reserve(draft)
    reserved = body["data"]["reserveDraft"]["draft"]
    assert reserved["status"] == "RESERVED" and reserved["reservation"]["operationKey"]
    assert code(await cast.update(reserved, cast.person, "USER", patch={"a": 1})) == "NOT_EDITABLE"
    first = await cast.check(reserved, cast.form())
    assert first["data"]["checkDraftDispatch"] == {"allowed": True, "managed": True}
    assert code(await cast.check(reserved, cast.form())) == "DISPATCH_CONSUMED"
    assert code(await cast.check(None, cast.form())) == "DISPATCH_CONSUMED"  # the form waits
    assert code(await cast.prepare_raw(cast.form(), session="s-2")) == "DISPATCH_CONSUMED"


async def test_the_ordinary_form_supersedes_an_unreserved_draft_and_blocks_a_later_prepare(
    gql: GraphQLClient,
) -> None:
    cast = await cast_of(gql)
    draft = (await cast.prepare(cast.form()))["draft"]
    manual = await cast.check(None, cast.form())
    assert manual["data"]["checkDraftDispatch"] == {"allowed": True, "managed": False}
    body = await cast.update(draft, cast.person, "USER", patch={"a": 1})
    assert code(body) == "STALE_REVISION"  # superseded: its revision moved on
    assert code(await cast.prepare_raw(cast.form())) == "DISPATCH_CONSUMED"


async def test_not_submitted_frees_the_owner_and_receipts_only_grow(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    reserved = await cast.reserved(cast.form())
    assert (await cast.check(reserved, cast.form()))["data"]["checkDraftDispatch"]["allowed"]
    freed = (await cast.observe(reserved, "NOT_SUBMITTED"))["data"]["observeDraft"]["draft"]
    assert (freed["status"], freed["cancelReason"]) == ("CANCELLED", "NOT_SUBMITTED")
    again = await cast.reserved(cast.form())
    assert again["id"] != reserved["id"]
    assert (await cast.check(again, cast.form()))["data"]["checkDraftDispatch"]["allowed"]
    partial = await cast.observe(again, "PARTIAL", receipt={"lines": [1]}, ownerExecutionRef="x")
    partial_draft = partial["data"]["observeDraft"]["draft"]
    assert partial_draft["status"] == "PARTIAL" and partial_draft["receipt"] == {"lines": [1]}
    removed = await cast.observe(partial_draft, "SUBMITTED", receipt={"lines": []})
    assert code(removed) == "RECEIPT_CONFLICT"
    done = await cast.observe(partial_draft, "SUBMITTED", receipt={"lines": [1, 2], "id": "c-9"})
    final = done["data"]["observeDraft"]["draft"]
    assert final["status"] == "OBSERVED" and final["receipt"] == {"lines": [1, 2], "id": "c-9"}


async def test_owners_sessions_and_kinds(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    await cast.prepare(cast.form("a"))
    assert code(await cast.prepare_raw(cast.form("a"), session="s-2")) == "TARGET_IN_USE"
    approval = {
        "kind": "APPROVAL",
        "family": "leave",
        "requestId": "L-1",
        "accountId": cast.person_id,
    }
    request = {"request": {"days": 2}}
    draft = (await cast.prepare(approval, request))["draft"]
    body = await cast.update(draft, cast.person, "USER", patch={"request": {"days": 9}})
    assert code(body) == "IMMUTABLE_REQUEST"
    assert code(await cast.check(None, approval)) == "REVIEW_REQUIRED"
    changed = await cast.prepare_raw(approval, {"request": {"days": 3}})
    assert code(changed) == "REQUEST_CONFLICT"
    reference = {"kind": "REFERENCE", "system": "crm", "recordId": "42"}
    ref = (await cast.prepare(reference, {}))["draft"]
    assert (
        code(await cast.update(ref, cast.person, "USER", patch={"a": 1})) == "REFERENCE_READ_ONLY"
    )
    big = {"blob": "x" * (65 * 1024)}
    assert code(await cast.prepare_raw(cast.form("big"), big)) == "TOO_LARGE"
    elsewhere = {**cast.form("z"), "accountId": str(uuid.uuid4())}
    assert code(await cast.prepare_raw(elsewhere)) == "ACCOUNT_MISMATCH"


async def test_an_expired_draft_is_refused(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    cast = await cast_of(gql)
    draft = (await cast.prepare(cast.form()))["draft"]
    frozen_clock.advance(7 * 86_400)
    assert code(await cast.reserve(draft)) == "EXPIRED"
    # An expired draft is stale: a new one takes the owner.
    assert (await cast.prepare(cast.form()))["draft"]["id"] != draft["id"]


async def test_roles(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    variables = {
        "input": {
            "requestId": "x",
            "sessionId": "s",
            "accountId": cast.person_id,
            "owner": cast.form(),
            "values": {},
        }
    }
    assert (await gql.error(PREPARE, variables, cast.person)).code == "FORBIDDEN"
    reserved = await cast.reserved(cast.form("r"))
    body = await gql.raw(
        CHECK, {"input": {"owner": cast.form("r"), "draftId": reserved["id"]}}, cast.person
    )
    assert code(body) == "FORBIDDEN"


@requires_postgres
async def test_fifty_concurrent_dispatch_checks_pass_once(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    reserved = await cast.reserved(cast.form())
    bodies = await asyncio.gather(*(cast.check(reserved, cast.form()) for _ in range(50)))
    assert Counter(code(b) for b in bodies) == Counter({"ok": 1, "DISPATCH_CONSUMED": 49})


async def test_cancelling_frees_the_owner_but_not_after_dispatch(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    draft = (await cast.prepare(cast.form()))["draft"]
    cancel = {
        "input": {
            "requestId": request_id(),
            "draftId": draft["id"],
            "sessionId": draft["sessionId"],
            "expectedRevision": draft["revision"],
        }
    }
    cancelled = (await gql(CANCEL, cancel, cast.person))["cancelDraft"]["draft"]
    assert (cancelled["status"], cancelled["cancelReason"]) == ("CANCELLED", "USER")
    assert (await gql(CANCEL, cancel, cast.person))["cancelDraft"]["replayed"] is True
    reserved = await cast.reserved(cast.form(), session="s-2")  # the owner is free again
    assert (await cast.check(reserved, cast.form()))["data"]["checkDraftDispatch"]["allowed"]
    late = {
        "input": {
            "requestId": request_id(),
            "draftId": reserved["id"],
            "sessionId": reserved["sessionId"],
            "expectedRevision": reserved["revision"],
        }
    }
    assert code(await gql.raw(CANCEL, late, cast.person)) == "NOT_EDITABLE"


async def test_a_draft_this_version_cannot_read_is_a_conflict_not_an_error(
    gql: GraphQLClient,
) -> None:
    """As if a newer version had stored an owner kind this one does not know."""
    cast = await cast_of(gql)
    draft = (await cast.prepare(cast.form()))["draft"]
    async with gql.sessionmaker() as session:
        row = await session.get(Draft, draft["id"])
        assert row is not None
        await session.exec(
            update(Draft).where(col(Draft.id) == draft["id"]).values(owner_kind="CALENDAR")
        )
        await session.commit()
    async with gql.sessionmaker() as session:
        stored = await session.get(Draft, draft["id"])
        assert stored is not None and stored.owner_kind == "CALENDAR", stored
    body = await cast.update(draft, cast.person, "USER", patch={"a": 1})
    assert code(body) == "RECORD_UNREADABLE", body
    again = await cast.prepare_raw(cast.form())
    assert code(again) == "RECORD_UNREADABLE", again


async def test_a_changed_form_while_its_draft_is_being_submitted(gql: GraphQLClient) -> None:
    """Same owner identity, other owner fields (a new schema version), while the draft is
    reserved: the prepare cannot supersede a draft that may be dispatching."""
    cast = await cast_of(gql)
    await cast.reserved(cast.form(schema="v1"))
    assert code(await cast.prepare_raw(cast.form(schema="v2"))) == "TARGET_CHANGED"
    # Unreserved, the changed form simply takes the owner.
    draft = (await cast.prepare(cast.form("2", schema="v1")))["draft"]
    fresh = (await cast.prepare(cast.form("2", schema="v2")))["draft"]
    assert fresh["id"] != draft["id"] and fresh["owner"]["schema"] == "v2"


async def test_limits_per_session_and_for_files(
    gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    cast = await cast_of(gql)
    monkeypatch.setattr(drafts, "DRAFTS_PER_SESSION", 3)
    for step in range(3):
        await cast.prepare(cast.form(f"cap-{step}"), session="busy")
    assert code(await cast.prepare_raw(cast.form("cap-3"), session="busy")) == "TOO_MANY_DRAFTS"
    assert (await cast.prepare(cast.form("cap-3"), session="quiet"))["draft"]["status"] == "DRAFT"
    scan = {"request": {"scan": "x" * (200 * 1024)}}
    approval = {
        "kind": "APPROVAL",
        "family": "receipts",
        "requestId": "R-1",
        "accountId": cast.person_id,
    }
    assert code(await cast.prepare_raw(approval, scan)) == "TOO_LARGE"
    with_files = {**approval, "carriesFiles": True}
    assert (await cast.prepare(with_files, scan))["draft"]["status"] == "DRAFT"
