"""Reading drafts: draft, drafts and draftReferences, and who may read what."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest

from signoff import clock
from signoff.database import SessionMaker
from signoff.models import Draft, OwnerKind, Role
from signoff.resolvers.drafts import reads as draft_reads
from tests.helpers import GraphQLClient
from tests.schema.test_drafts import cast_of

READ = """query($id: ID!, $s: String!) {
  draft(id: $id, sessionId: $s) { id status values owner accountId sessionId }
}"""
LIST = """query($s: String!, $a: ID) {
  drafts(sessionId: $s, accountId: $a) { id values accountId }
}"""
REFERENCES = """query($s: String!, $a: ID) {
  draftReferences(sessionId: $s, accountId: $a) {
    id status ownerKind owner revision expiresAt createdAt updatedAt
  }
}"""


async def actor_id(gql: GraphQLClient, token: str) -> str:
    data = await gql("{ viewer { actor { id } } }", {}, token)
    return str(data["viewer"]["actor"]["id"])


def draft_row(account_id: str, session_id: str = "s-1", **fields: Any) -> Draft:
    """A draft as prepare would store it; ``fields`` override any column."""
    now = clock.now()
    defaults: dict[str, Any] = {
        "prepared_by_id": account_id,
        "owner": {"kind": "FORM", "form": "f", "step": uuid.uuid4().hex},
        "owner_kind": OwnerKind.FORM,
        "owner_key": f"sha256:{uuid.uuid4().hex}",
        "values": {"n": 1},
        "values_digest": "sha256:x",
        "updated_by_user": [],
        "expires_at": now + timedelta(days=7),
        "created_at": now,
        "updated_at": now,
    }
    return Draft(account_id=account_id, session_id=session_id, **(defaults | fields))


async def seed(sessionmaker: SessionMaker, *rows: Draft) -> list[str]:
    async with sessionmaker() as session:
        session.add_all(rows)
        await session.commit()
    return [row.id for row in rows]


async def test_a_person_reads_its_own_draft_and_nobody_else_but_an_admin_does(
    gql: GraphQLClient,
) -> None:
    cast = await cast_of(gql)
    prepared = (await cast.prepare(cast.form(), {"amount": 7}))["draft"]
    variables = {"id": prepared["id"], "s": "s-1"}
    mine = (await gql(READ, variables, cast.person))["draft"]
    assert mine["values"] == {"amount": 7}
    assert mine["accountId"] == cast.person_id
    admin = await gql.token(Role.ADMIN)
    assert (await gql(READ, variables, admin))["draft"]["id"] == prepared["id"]
    # Another account, the agent that prepared it, the executor: as if it did not exist.
    for token in (cast.other, cast.agent, cast.executor):
        assert (await gql.error(READ, variables, token)).code == "NOT_FOUND"
    # Its own account, in another session.
    wrong_session = {"id": prepared["id"], "s": "s-2"}
    assert (await gql.error(READ, wrong_session, cast.person)).code == "NOT_FOUND"
    missing = {"id": str(uuid.uuid4()), "s": "s-1"}
    assert (await gql.error(READ, missing, cast.person)).code == "NOT_FOUND"


async def test_a_reference_draft_is_readable(gql: GraphQLClient) -> None:
    cast = await cast_of(gql)
    owner = {"kind": "REFERENCE", "accountId": cast.person_id, "system": "crm", "id": "42"}
    body = await cast.prepare_raw(owner, {})
    assert not body.get("errors"), body
    prepared = body["data"]["prepareDraft"]["draft"]
    read = (await gql(READ, {"id": prepared["id"], "s": "s-1"}, cast.person))["draft"]
    assert read["owner"]["kind"] == "REFERENCE"
    assert read["status"] == "DRAFT"


async def test_drafts_lists_the_newest_fifty_of_the_session_oldest_first(
    gql: GraphQLClient, sessionmaker: SessionMaker
) -> None:
    person = await gql.token(Role.REVIEWER)
    me = await actor_id(gql, person)
    other = await gql.token(Role.AGENT)
    start = clock.now() - timedelta(hours=1)
    mine = await seed(
        sessionmaker,
        *(
            draft_row(me, created_at=start + timedelta(seconds=i), values={"i": i})
            for i in range(55)
        ),
    )
    await seed(
        sessionmaker,
        draft_row(me, "s-2"),  # another session
        draft_row(await actor_id(gql, other)),  # another account, same session id
    )
    listed = (await gql(LIST, {"s": "s-1"}, person))["drafts"]
    assert [d["id"] for d in listed] == mine[5:]
    assert [d["values"]["i"] for d in listed] == list(range(5, 55))
    assert (await gql(LIST, {"s": "s-3"}, person))["drafts"] == []


async def test_draft_references_carry_no_values_and_are_bounded(
    gql: GraphQLClient, sessionmaker: SessionMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(draft_reads, "DRAFT_REFERENCE_LIST_LIMIT", 3)
    person = await gql.token(Role.INTEGRATION)  # any role reads its own
    me = await actor_id(gql, person)
    start = clock.now() - timedelta(hours=1)
    ids = await seed(
        sessionmaker,
        *(draft_row(me, created_at=start + timedelta(seconds=i)) for i in range(5)),
    )
    refs = (await gql(REFERENCES, {"s": "s-1"}, person))["draftReferences"]
    assert [r["id"] for r in refs] == ids[2:]
    assert refs[0]["ownerKind"] == "FORM" and refs[0]["owner"]["kind"] == "FORM"
    assert refs[0]["revision"] == 1
    body = await gql.raw('query { draftReferences(sessionId: "s-1") { values } }', {}, person)
    assert body["errors"][0]["message"].startswith("Cannot query field 'values'")


async def test_only_admins_list_another_accounts_drafts(
    gql: GraphQLClient, sessionmaker: SessionMaker
) -> None:
    person = await gql.token(Role.REVIEWER)
    me = await actor_id(gql, person)
    (draft_id,) = await seed(sessionmaker, draft_row(me))
    intruder = await gql.token(Role.OPERATOR)
    for query in (LIST, REFERENCES):
        refused = await gql.error(query, {"s": "s-1", "a": me}, intruder)
        assert refused.code == "FORBIDDEN"
    admin = await gql.token(Role.ADMIN)
    assert [d["id"] for d in (await gql(LIST, {"s": "s-1", "a": me}, admin))["drafts"]] == [
        draft_id
    ]
    refs = (await gql(REFERENCES, {"s": "s-1", "a": me}, admin))["draftReferences"]
    assert [r["id"] for r in refs] == [draft_id]
    # Without accountId an admin lists its own drafts, of which it has none.
    assert (await gql(LIST, {"s": "s-1"}, admin))["drafts"] == []


async def test_a_list_too_large_to_answer_is_refused(
    gql: GraphQLClient, sessionmaker: SessionMaker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(draft_reads, "DRAFT_LIST_MAX_BYTES", 100)
    person = await gql.token(Role.REVIEWER)
    me = await actor_id(gql, person)
    await seed(sessionmaker, draft_row(me, values={"text": "x" * 60}))
    assert len((await gql(LIST, {"s": "s-1"}, person))["drafts"]) == 1
    await seed(sessionmaker, draft_row(me, values={"text": "y" * 60}))
    assert (await gql.error(LIST, {"s": "s-1"}, person)).code == "TOO_LARGE"
    assert len((await gql(REFERENCES, {"s": "s-1"}, person))["draftReferences"]) == 2
