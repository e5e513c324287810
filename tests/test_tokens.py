"""Tokens and roles managed with the real CLI, as the API then sees them.

``signoff token create`` on an existing name used to change the actor's role without a
word and leave its old tokens valid; a role now changes only through ``signoff actor
set-role``, and ``signoff token revoke`` ends tokens.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from typing import Any

from signoff.config import Settings
from signoff.models import Role
from tests.helpers import GraphQLClient
from tests.processes import run_cli, signoff_env

VIEWER = "{ viewer { actor { id name role } } }"
AUDIT = """query($id: ID!) {
  auditEvents(targetType: "actor", targetId: $id, first: 100) {
    edges { node { action details actor { name } } }
  }
}"""


async def cli(database_url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(run_cli, *args, env=signoff_env(database_url), stdin=stdin)


async def token(database_url: str, *args: str) -> str:
    """``signoff token create ARGS``; the token it prints on its last line."""
    result = await cli(database_url, "token", "create", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


def assert_refused(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert result.returncode == 2, result
    assert result.stderr.strip() == f"error: {message}"
    assert result.stdout == ""


async def viewer(gql: GraphQLClient, token: str) -> dict[str, Any]:
    actor: dict[str, Any] = (await gql(VIEWER, token=token))["viewer"]["actor"]
    return actor


async def refused_within_the_cache_period(
    gql: GraphQLClient, token: str, code: str = "UNAUTHENTICATED"
) -> dict[str, Any]:
    """A revoked token (or a disabled actor's) is refused once the server's viewer cache
    lets it go: within ``SIGNOFF_AUTH_CACHE_SECONDS`` (2 s by default) of the change.
    Returns the error."""
    deadline = time.monotonic() + Settings.auth_cache_seconds + 0.5
    while time.monotonic() < deadline:
        answer = await gql.raw(VIEWER, token=token)
        if answer.get("errors"):
            error: dict[str, Any] = answer["errors"][0]
            assert error["extensions"]["code"] == code
            return error
        await asyncio.sleep(0.1)
    raise AssertionError("the token still authenticated after the cache period")


async def viewer_within_the_cache_period(
    gql: GraphQLClient, token: str, *, role: str
) -> dict[str, Any]:
    """The token's viewer once it shows ``role``, within the server's cache period."""
    deadline = time.monotonic() + Settings.auth_cache_seconds + 0.5
    while True:
        actor = await viewer(gql, token)
        if actor["role"] == role or time.monotonic() > deadline:
            assert actor["role"] == role
            return actor
        await asyncio.sleep(0.1)


async def audit_of(gql: GraphQLClient, actor_id: str) -> list[dict[str, Any]]:
    """The actor's audit events, oldest first."""
    admin = await gql.token(Role.ADMIN)
    edges = (await gql(AUDIT, {"id": actor_id}, admin))["auditEvents"]["edges"]
    return [e["node"] for e in reversed(edges)]


async def test_token_create_names_the_actors_id_and_prints_the_token_alone(
    gql: GraphQLClient, database_url: str
) -> None:
    """An operator needs a reviewer's id (to hand a task or an approval link to them): the
    command says it on stderr beside the token's line; stdout holds the token alone."""
    created = await cli(database_url, "token", "create", "--name", "alice", "--role", "reviewer")
    assert created.returncode == 0, created.stderr
    [printed] = created.stdout.splitlines()
    actor = await viewer(gql, printed)
    assert created.stderr == (
        f"Token for alice (reviewer), actor id {actor['id']}; it is shown once, keep it secret:\n"
    )


async def test_token_create_refuses_another_role_for_an_existing_actor(
    gql: GraphQLClient, database_url: str
) -> None:
    alice = await token(database_url, "--name", "alice", "--role", "reviewer")
    refused = await cli(database_url, "token", "create", "--name", "alice", "--role", "admin")
    assert_refused(
        refused,
        "alice is a reviewer, not an admin; nothing was changed. To change the role, "
        "run `signoff actor set-role --name alice --role admin`.",
    )
    actor = await viewer(gql, alice)
    assert actor["role"] == "REVIEWER"
    assert [e["action"] for e in await audit_of(gql, actor["id"])] == ["actor.token_created"]

    # The same role, or none, issues another token for the actor as it is.
    for args in (("--role", "reviewer"), ()):
        another = await token(database_url, "--name", "alice", *args)
        assert await viewer(gql, another) == actor
    assert await viewer(gql, alice) == actor


async def test_token_create_needs_a_role_for_a_new_actor(
    gql: GraphQLClient, database_url: str
) -> None:
    refused = await cli(database_url, "token", "create", "--name", "bob")
    assert_refused(refused, "bob is a new actor: give it a role with --role.")


async def test_a_revoked_token_no_longer_authenticates(
    gql: GraphQLClient, database_url: str
) -> None:
    first = await token(database_url, "--name", "alice", "--role", "reviewer")
    second = await token(database_url, "--name", "alice")
    actor = await viewer(gql, first)

    # The token on stdin ("-") stays out of the process list and the shell history.
    assert await viewer(gql, first) == actor  # now kept by the server's viewer cache
    revoked = await cli(database_url, "token", "revoke", "--token", "-", stdin=first + "\n")
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout.strip() == "Revoked 1 token of alice."
    await refused_within_the_cache_period(gql, first)
    assert await viewer(gql, second) == actor

    again = await cli(database_url, "token", "revoke", "--token", first)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "That token of alice was revoked already."

    everything = await cli(database_url, "token", "revoke", "--name", "alice")
    assert everything.returncode == 0, everything.stderr
    assert everything.stdout.strip() == "Revoked 1 token of alice."
    await refused_within_the_cache_period(gql, second)

    events = await audit_of(gql, actor["id"])
    revocations = [e for e in events if e["action"] == "actor.token_revoked"]
    assert len(revocations) == 2
    assert all(e["actor"] is None and e["details"]["token_id"] for e in revocations)
    assert len({e["details"]["token_id"] for e in revocations}) == 2


async def test_token_revoke_refuses_what_it_cannot_find(
    gql: GraphQLClient, database_url: str
) -> None:
    unknown = await cli(database_url, "token", "revoke", "--token", "so_not-a-real-token")
    assert_refused(unknown, "No token matches; nothing was revoked.")
    nobody = await cli(database_url, "token", "revoke", "--name", "nobody")
    assert_refused(nobody, "No actor is named nobody.")
    neither = await cli(database_url, "token", "revoke")
    assert neither.returncode == 2 and "one of the arguments --name --token" in neither.stderr


async def test_actor_set_role_changes_the_role_on_purpose(
    gql: GraphQLClient, database_url: str
) -> None:
    alice = await token(database_url, "--name", "alice", "--role", "reviewer")
    assert (await viewer(gql, alice))["role"] == "REVIEWER"  # now kept by the viewer cache
    changed = await cli(database_url, "actor", "set-role", "--name", "alice", "--role", "operator")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == "alice is now an operator (was a reviewer)."
    actor = await viewer_within_the_cache_period(gql, alice, role="OPERATOR")

    same = await cli(database_url, "actor", "set-role", "--name", "alice", "--role", "operator")
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == "alice is an operator already; nothing was changed."

    changes = [e for e in await audit_of(gql, actor["id"]) if e["action"] == "actor.role_changed"]
    assert changes == [
        {
            "action": "actor.role_changed",
            "details": {"before": "reviewer", "after": "operator"},
            "actor": None,
        }
    ]
    nobody = await cli(database_url, "actor", "set-role", "--name", "bob", "--role", "agent")
    assert_refused(nobody, "No actor is named bob.")


async def test_actor_disable_refuses_its_tokens_until_it_is_enabled(
    gql: GraphQLClient, database_url: str
) -> None:
    alice = await token(database_url, "--name", "alice", "--role", "reviewer")
    actor = await viewer(gql, alice)  # now kept by the server's viewer cache

    disabled = await cli(database_url, "actor", "disable", "--name", "alice")
    assert disabled.returncode == 0, disabled.stderr
    assert disabled.stdout.strip() == (
        "alice is now disabled; its tokens are refused until it is enabled."
    )
    error = await refused_within_the_cache_period(gql, alice, "FORBIDDEN")
    assert error["message"] == (
        "alice is disabled; an operator can enable it with `signoff actor enable --name alice`."
    )
    # A token made while the actor is disabled is refused as well.
    later = await token(database_url, "--name", "alice")
    assert (await gql.error(VIEWER, token=later)).code == "FORBIDDEN"

    again = await cli(database_url, "actor", "disable", "--name", "alice")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "alice is disabled already; nothing was changed."

    enabled = await cli(database_url, "actor", "enable", "--name", "alice")
    assert enabled.returncode == 0, enabled.stderr
    assert enabled.stdout.strip() == "alice is now enabled; its tokens work again."
    # A refusal is never kept: the tokens work at once.
    assert await viewer(gql, alice) == actor
    assert await viewer(gql, later) == actor
    same = await cli(database_url, "actor", "enable", "--name", "alice")
    assert same.returncode == 0, same.stderr
    assert same.stdout.strip() == "alice is enabled already; nothing was changed."

    switches = [
        e
        for e in await audit_of(gql, actor["id"])
        if e["action"] in {"actor.disabled", "actor.enabled"}
    ]
    assert switches == [
        {"action": "actor.disabled", "details": {}, "actor": None},
        {"action": "actor.enabled", "details": {}, "actor": None},
    ]


async def test_actor_disable_and_enable_refuse_an_unknown_name(database_url: str) -> None:
    for action in ("disable", "enable"):
        nobody = await cli(database_url, "actor", action, "--name", "bob")
        assert_refused(nobody, "No actor is named bob.")


async def test_actor_link_makes_two_actors_one_person_and_unlink_undoes_it(
    gql: GraphQLClient, database_url: str
) -> None:
    alice = await token(database_url, "--name", "alice", "--role", "reviewer")
    await token(database_url, "--name", "Alice Ng", "--role", "reviewer")

    linked = await cli(database_url, "actor", "link", "--name", "alice", "--to", "Alice Ng")
    assert linked.returncode == 0, linked.stderr
    assert linked.stdout.strip() == "alice is now one person with: Alice Ng, alice."
    unlinked = await cli(database_url, "actor", "unlink", "--name", "alice")
    assert unlinked.stdout.strip() == "alice now stands for itself alone."
    actions = [e["action"] for e in await audit_of(gql, (await viewer(gql, alice))["id"])]
    assert actions[-2:] == ["actor.linked", "actor.unlinked"]

    neither = await cli(database_url, "actor", "link", "--name", "alice")
    assert_refused(neither, "Give either --to, or both --issuer and --subject.")
    nobody = await cli(database_url, "actor", "link", "--name", "alice", "--to", "bob")
    assert_refused(nobody, "No actor is named bob.")
