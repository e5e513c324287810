"""API tokens in GraphQL: admins create (the value shown once), list and revoke them."""

from __future__ import annotations

from datetime import datetime

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.node import Node


@strawberry.type(
    description="An API token, without its value: only its hash is stored, and the value "
    "was shown once, when it was created."
)
class ApiToken(Node):
    id: strawberry.ID
    created_at: datetime
    revoked_at: datetime | None = strawberry.field(
        description="When it was revoked; it authenticates no more."
    )
    actor_id: strawberry.Private[str]

    @strawberry.field(description="Who the token stands for.")
    async def actor(self, info: strawberry.Info) -> Actor:
        actor = await load_actor(info, self.actor_id)
        assert actor is not None  # tokens reference their actor
        return actor

    @classmethod
    def from_model(cls, token: models.ApiToken) -> ApiToken:
        return cls(
            id=strawberry.ID(token.id),
            created_at=token.created_at,
            revoked_at=token.revoked_at,
            actor_id=token.actor_id,
        )


@strawberry.input
class CreateTokenInput:
    name: str = strawberry.field(description="The actor's name; a new one is made if none.")
    role: models.Role | None = strawberry.field(
        default=None,
        description="Required for a new actor; an existing actor keeps its own "
        "(ROLE_CONFLICT if this names another).",
    )
    queue_slugs: list[str] = strawberry.field(
        default_factory=list, description="Queues the actor reviews (added to its own)."
    )


@strawberry.type
class CreateTokenPayload:
    token: str = strawberry.field(
        description="The token itself (Authorization: Bearer …). Shown only here, once."
    )
    api_token: ApiToken


@strawberry.input
class RevokeTokenInput:
    token_id: strawberry.ID
