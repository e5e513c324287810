"""What an actor may do: its role, whether it is disabled, and its tokens' revocation.

Each change is audited and in the feed (``ACCESS_KINDS``), where live subscriptions read
the actor's viewer again; the snapshot holds the actor's access as it now is, never a
token or its hash. A revocation is the token's move and the actor's event: one event per
call however many tokens it revoked, and one audit record per token.
"""

from __future__ import annotations

from signoff.models import Actor, ActorAccess, ApiToken, ChangeKind, Role, TokenState
from signoff.resolvers.core.transitions import Edge, Lifecycle, Outcome, Stamp, Subject
from signoff.resolvers.core.work import UnitOfWork

DISABLE = Edge.of(
    "disable",
    [ActorAccess.ENABLED],
    ActorAccess.DISABLED,
    ChangeKind.ACTOR_DISABLED,
    "actor.disabled",
)
ENABLE = Edge.of(
    "enable", [ActorAccess.DISABLED], ActorAccess.ENABLED, ChangeKind.ACTOR_ENABLED, "actor.enabled"
)
# Any role to any other; the caller names the new one and guards on the one it read.
CHANGE_ROLE = Edge(
    "change_role",
    frozenset(Role),
    {role: Outcome(ChangeKind.ACTOR_ROLE_CHANGED, "actor.role_changed") for role in Role},
)
# The records are the actor's (``announce_revoked``), not the token's.
REVOKE_TOKEN = Edge.of("revoke_token", [TokenState.LIVE], TokenState.REVOKED, None, None)


async def describe_actor(_: UnitOfWork, actor: Actor) -> Subject:
    return Subject(
        queue_id=None,
        proposal_id=None,
        snapshot={"role": Role(actor.role).value, "disabled": actor.disabled_at is not None},
    )


async def describe_token(_: UnitOfWork, token: ApiToken) -> Subject:
    return Subject(queue_id=None, proposal_id=None, snapshot={})


ACTOR_ACCESS: Lifecycle[Actor, ActorAccess] = Lifecycle(
    "actor",
    Actor,
    [DISABLE, ENABLE],
    describe=describe_actor,
    state_field="disabled_at",
    stamp=Stamp(ActorAccess.ENABLED, ActorAccess.DISABLED),
)
ACTOR_ROLE: Lifecycle[Actor, Role] = Lifecycle(
    "actor", Actor, [CHANGE_ROLE], describe=describe_actor, state_field="role"
)
API_TOKEN: Lifecycle[ApiToken, TokenState] = Lifecycle(
    "api_token",
    ApiToken,
    [REVOKE_TOKEN],
    describe=describe_token,
    state_field="revoked_at",
    stamp=Stamp(TokenState.LIVE, TokenState.REVOKED),
)


async def announce_revoked(
    work: UnitOfWork, actor: Actor, token_ids: list[str], by: str | None = None
) -> None:
    """The actor's records of a revocation: its event with the first token's audit row,
    and an audit row for each other token; ``by``: the admin who revoked (None: the CLI)."""
    first, *others = token_ids
    kind = ChangeKind.ACTOR_TOKEN_REVOKED
    await ACTOR_ACCESS.announce(
        work, actor, kind=kind, action=kind.value, actor_id=by, details={"token_id": first}
    )
    for token_id in others:
        await ACTOR_ACCESS.announce(
            work, actor, kind=None, action=kind.value, actor_id=by, details={"token_id": token_id}
        )
