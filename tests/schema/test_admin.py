"""What admins do in GraphQL that needed the CLI, or only a write: tokens (created and shown
once, listed without values, revoked by id), a queue's members and channels, standing
delegations and the sign-in claim mapping; each refused in code to everyone else."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from httpx import ASGITransport, AsyncClient
from sqlalchemy import func
from sqlmodel import col, select

from signoff.config import Settings
from signoff.constants import TOKEN_PREFIX
from signoff.database import create_sessionmaker
from signoff.models import ApiToken, AuditEvent, Role
from signoff.oidc_settings import OidcSettings, parse_claim_mapping
from signoff.web.app import create_app
from tests.helpers import GraphQLClient, build_world

CREATE_TOKEN = """
mutation($input: CreateTokenInput!) {
  createToken(input: $input) { token apiToken { id revokedAt actor { name role } } }
}
"""
REVOKE_TOKEN = """
mutation($id: ID!) { revokeToken(input: {tokenId: $id}) { id revokedAt actor { name } } }
"""
TOKENS = """
query($revoked: Boolean!) { tokens(revoked: $revoked) { id revokedAt actor { name } } }
"""
VIEWER = "{ viewer { actor { name role } queues { slug } } }"
MEMBERS = "query($id: ID!) { queue(id: $id) { members { name role } } }"
CHANNELS = """
query($id: ID!, $removed: Boolean!) {
  queue(id: $id) { notificationChannels(removed: $removed) { id kind url disabled removedAt } }
}
"""
ADD_CHANNEL = """
mutation($input: AddNotificationChannelInput!) {
  addNotificationChannel(input: $input) { channel { id } }
}
"""
SWITCH = "mutation($id: ID!) {{ {name}(input: {{channelId: $id}}) {{ id disabled }} }}"
ADD_MEMBER = """
mutation($q: ID!, $a: ID!) { addQueueMember(input: {queueId: $q, actorId: $a}) { id } }
"""
SET_DELEGATE = """
mutation($input: SetDelegateInput!) { setDelegate(input: $input) { id } }
"""
DELEGATIONS = "{ delegations { id endsAt actor { name } delegate { name } } }"
MAPPING = """
{ claimMapping { groupsClaim nameClaims groups { group role queues missingQueues line } } }
"""


async def _actor_id(gql: GraphQLClient, admin: str, name: str) -> str:
    found = await gql(
        "query($n: String!) { actors(name: $n) { nodes { id } } }", {"n": name}, admin
    )
    actor_id: str = found["actors"]["nodes"][0]["id"]
    return actor_id


async def _token_count(gql: GraphQLClient) -> int:
    async with gql.sessionmaker() as session:
        return (await session.exec(select(func.count()).select_from(ApiToken))).one()


async def test_an_admin_creates_a_token_shown_once_and_revokes_it_by_id(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    made = (
        await gql(
            CREATE_TOKEN,
            {"input": {"name": "ops-bot", "role": "OPERATOR", "queueSlugs": []}},
            world.admin,
        )
    )["createToken"]
    assert made["token"].startswith(TOKEN_PREFIX)
    assert made["apiToken"]["actor"] == {"name": "ops-bot", "role": "OPERATOR"}
    viewer = (await gql(VIEWER, token=made["token"]))["viewer"]
    assert viewer["actor"] == {"name": "ops-bot", "role": "OPERATOR"}

    listed = (await gql(TOKENS, {"revoked": False}, world.admin))["tokens"]
    assert made["apiToken"]["id"] in [t["id"] for t in listed]
    assert made["token"] not in str(listed)  # never its value again

    revoked = await gql(REVOKE_TOKEN, {"id": made["apiToken"]["id"]}, world.admin)
    assert revoked["revokeToken"]["revokedAt"] is not None
    assert (await gql.error(VIEWER, token=made["token"])).code == "UNAUTHENTICATED"
    again = (await gql(REVOKE_TOKEN, {"id": made["apiToken"]["id"]}, world.admin))["revokeToken"]
    assert again["revokedAt"] == revoked["revokeToken"]["revokedAt"]
    live = (await gql(TOKENS, {"revoked": False}, world.admin))["tokens"]
    assert made["apiToken"]["id"] not in [t["id"] for t in live]
    everyone = (await gql(TOKENS, {"revoked": True}, world.admin))["tokens"]
    assert made["apiToken"]["id"] in [t["id"] for t in everyone]

    async with gql.sessionmaker() as session:
        rows = await session.exec(
            select(AuditEvent.action, AuditEvent.actor_id)
            .where(col(AuditEvent.action).in_(["actor.token_created", "actor.token_revoked"]))
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        by_admin = [action for action, actor_id in rows.all() if actor_id is not None]
    assert by_admin == ["actor.token_created", "actor.token_revoked"]


async def test_tokens_are_for_admins_only_and_a_refusal_changes_nothing(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    operator = await gql.token(Role.OPERATOR, name="operator")
    before = await _token_count(gql)
    for token in (operator, world.reviewers[0], world.agent):
        refused = await gql.error(CREATE_TOKEN, {"input": {"name": "x", "role": "ADMIN"}}, token)
        assert refused.code == "FORBIDDEN"
        assert (await gql.error(TOKENS, {"revoked": True}, token)).code == "FORBIDDEN"
    ids = [t["id"] for t in (await gql(TOKENS, {"revoked": False}, world.admin))["tokens"]]
    assert (await gql.error(REVOKE_TOKEN, {"id": ids[0]}, operator)).code == "FORBIDDEN"
    assert await _token_count(gql) == before
    assert (await gql(VIEWER, token=operator))["viewer"]["actor"]["name"] == "operator"
    # Nor does node() show a token to anyone but an admin.
    node = "query($id: ID!) { node(id: $id) { __typename id } }"
    assert (await gql.error(node, {"id": ids[0]}, operator)).code == "NOT_FOUND"
    found = (await gql(node, {"id": ids[0]}, world.admin))["node"]
    assert found == {"__typename": "ApiToken", "id": ids[0]}


async def test_creating_a_token_is_refused_in_code(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await gql.token(Role.OPERATOR, name="operator")
    before = await _token_count(gql)
    wrong_role = {"input": {"name": "operator", "role": "ADMIN"}}
    assert (await gql.error(CREATE_TOKEN, wrong_role, world.admin)).code == "ROLE_CONFLICT"
    no_role = {"input": {"name": "newcomer"}}
    assert (await gql.error(CREATE_TOKEN, no_role, world.admin)).code == "VALIDATION_FAILED"
    no_queue = {"input": {"name": "r", "role": "REVIEWER", "queueSlugs": ["nowhere"]}}
    assert (await gql.error(CREATE_TOKEN, no_queue, world.admin)).code == "NOT_FOUND"
    assert (await gql.error(REVOKE_TOKEN, {"id": "nope"}, world.admin)).code == "NOT_FOUND"
    assert await _token_count(gql) == before


async def test_a_queue_shows_its_members_to_operators_and_admins(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    newcomer = await gql.token(Role.REVIEWER, name="aaron")
    actor_id = await _actor_id(gql, world.admin, "aaron")
    await gql(ADD_MEMBER, {"q": world.queue_id, "a": actor_id}, world.admin)
    operator = await gql.token(Role.OPERATOR, name="operator")
    members = (await gql(MEMBERS, {"id": world.queue_id}, operator))["queue"]["members"]
    assert members == [
        {"name": "aaron", "role": "REVIEWER"},
        {"name": "reviewer-0", "role": "REVIEWER"},
    ]
    refused = await gql.error(MEMBERS, {"id": world.queue_id}, world.reviewers[0])
    assert refused.code == "FORBIDDEN"
    viewer = (await gql(VIEWER, token=newcomer))["viewer"]
    assert viewer["queues"] == [{"slug": world.queue_slug}]


async def test_a_queue_lists_its_channels_and_removed_ones_on_request(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    added = []
    for n in range(2):
        channel = {"queueId": world.queue_id, "kind": "WEBHOOK", "url": f"http://127.0.0.1:9/{n}"}
        result = await gql(ADD_CHANNEL, {"input": channel}, world.admin)
        added.append(result["addNotificationChannel"]["channel"]["id"])
    await gql(SWITCH.format(name="disableNotificationChannel"), {"id": added[0]}, world.admin)
    await gql(SWITCH.format(name="removeNotificationChannel"), {"id": added[1]}, world.admin)

    shown = await gql(CHANNELS, {"id": world.queue_id, "removed": False}, world.admin)
    assert [(c["id"], c["disabled"]) for c in shown["queue"]["notificationChannels"]] == [
        (added[0], True)
    ]
    every = await gql(CHANNELS, {"id": world.queue_id, "removed": True}, world.admin)
    assert [c["id"] for c in every["queue"]["notificationChannels"]] == added
    refused = await gql.error(
        CHANNELS, {"id": world.queue_id, "removed": False}, world.reviewers[0]
    )
    assert refused.code == "FORBIDDEN"


async def test_standing_delegations_are_listed_for_operators_and_admins(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql, reviewers=2)
    delegate = (await gql(VIEWER, token=world.reviewers[1]))["viewer"]["actor"]["name"]
    delegate_id = (
        await gql(
            "query($n: String!) { actors(name: $n) { nodes { id } } }", {"n": delegate}, world.admin
        )
    )["actors"]["nodes"][0]["id"]
    ends = (datetime.now(UTC) + timedelta(days=2)).isoformat()
    await gql(
        SET_DELEGATE, {"input": {"delegateId": delegate_id, "endsAt": ends}}, world.reviewers[0]
    )

    listed = (await gql(DELEGATIONS, token=world.admin))["delegations"]
    assert [(d["actor"]["name"], d["delegate"]["name"]) for d in listed] == [
        ("reviewer-0", "reviewer-1")
    ]
    await gql("mutation { clearDelegate }", token=world.reviewers[0])
    assert (await gql(DELEGATIONS, token=world.admin))["delegations"] == []
    assert (await gql.error(DELEGATIONS, token=world.reviewers[0])).code == "FORBIDDEN"


async def test_the_claim_mapping_is_null_without_sign_in(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=1)
    assert (await gql(MAPPING, token=world.admin))["claimMapping"] is None
    assert (await gql.error(MAPPING, token=world.reviewers[0])).code == "FORBIDDEN"


MAPPING_FILE = """\
groups-claim roles
name-claims email name
signoff-admins admin
signoff-payments reviewer payments refunds
"""


@pytest.fixture
async def mapped(settings: Settings, clean_database: None) -> AsyncIterator[GraphQLClient]:
    oidc = OidcSettings(
        issuer="http://127.0.0.1:9/idp",
        client_id="signoff",
        mapping=parse_claim_mapping(MAPPING_FILE, "claims.txt"),
    )
    application = create_app(dataclasses.replace(settings, oidc=oidc))
    async with application.router.lifespan_context(application):
        transport = ASGITransport(app=application)
        async with AsyncClient(transport=transport, base_url="http://signoff.test") as http:
            yield GraphQLClient(http, create_sessionmaker(application.state.engine))


async def test_admins_read_the_claim_mapping_with_the_queues_it_misses(
    mapped: GraphQLClient,
) -> None:
    admin = await mapped.token(Role.ADMIN, name="admin")
    await mapped(
        'mutation { createQueue(input: {slug: "payments", name: "Payments"}) { id } }',
        token=admin,
    )
    mapping = (await mapped(MAPPING, token=admin))["claimMapping"]
    assert mapping == {
        "groupsClaim": "roles",
        "nameClaims": ["email", "name"],
        "groups": [
            {
                "group": "signoff-admins",
                "role": "ADMIN",
                "queues": [],
                "missingQueues": [],
                "line": 3,
            },
            {
                "group": "signoff-payments",
                "role": "REVIEWER",
                "queues": ["payments", "refunds"],
                "missingQueues": ["refunds"],
                "line": 4,
            },
        ],
    }
    operator = await mapped.token(Role.OPERATOR, name="operator")
    assert (await mapped.error(MAPPING, token=operator)).code == "FORBIDDEN"
