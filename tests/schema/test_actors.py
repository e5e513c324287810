"""``actors``: operators and admins find an actor's id by name or role, a page at a time;
everyone else is refused."""

from __future__ import annotations

from signoff.models import Role
from tests.helpers import GraphQLClient

ACTORS = """
query($role: Role, $name: String, $first: Int, $after: String) {
  actors(role: $role, name: $name, first: $first, after: $after) {
    nodes { id name role createdAt }
    pageInfo { hasNextPage endCursor }
  }
}
"""
VIEWER_ID = "query { viewer { actor { id } } }"


async def test_an_operator_finds_a_reviewers_id_by_name(gql: GraphQLClient) -> None:
    operator = await gql.token(Role.OPERATOR, name="ops")
    alice = await gql.token(Role.REVIEWER, name="alice")
    await gql.token(Role.REVIEWER, name="bob")
    alice_id = (await gql(VIEWER_ID, token=alice))["viewer"]["actor"]["id"]

    [found] = (await gql(ACTORS, {"name": "alice"}, operator))["actors"]["nodes"]
    assert (found["id"], found["name"], found["role"]) == (alice_id, "alice", "REVIEWER")
    assert found["createdAt"]
    assert (await gql(ACTORS, {"name": "nobody"}, operator))["actors"]["nodes"] == []


async def test_actors_are_listed_by_name_filtered_by_role_and_paged(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN, name="root")
    for name in ("carol", "alice", "bob"):
        await gql.token(Role.REVIEWER, name=name)
    await gql.token(Role.AGENT, name="bot")

    first = (await gql(ACTORS, {"role": "REVIEWER", "first": 2}, admin))["actors"]
    assert [n["name"] for n in first["nodes"]] == ["alice", "bob"]
    assert first["pageInfo"]["hasNextPage"] is True
    rest = (
        await gql(ACTORS, {"role": "REVIEWER", "after": first["pageInfo"]["endCursor"]}, admin)
    )["actors"]
    assert [n["name"] for n in rest["nodes"]] == ["carol"]
    assert rest["pageInfo"]["hasNextPage"] is False

    everyone = (await gql(ACTORS, {}, admin))["actors"]["nodes"]
    assert [n["name"] for n in everyone] == ["alice", "bob", "bot", "carol", "root"]


async def test_only_operators_and_admins_list_actors(gql: GraphQLClient) -> None:
    for role in (Role.REVIEWER, Role.AGENT, Role.INTEGRATION):
        token = await gql.token(role)
        error = await gql.error(ACTORS, {}, token)
        assert error.code == "FORBIDDEN", role
    error = await gql.error(ACTORS, {})
    assert error.code == "UNAUTHENTICATED"
