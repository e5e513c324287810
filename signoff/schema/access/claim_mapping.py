"""The sign-in claim mapping in GraphQL, for admins to read (it is a file, read at start)."""

from __future__ import annotations

import strawberry

import signoff.schema.enums  # noqa: F401  (registers the enums)
from signoff import models
from signoff.resolvers.access.identities import MappingRead


@strawberry.type(description="One line of the mapping: members of a group are a role in queues.")
class ClaimMappingGroup:
    group: str
    role: models.Role
    queues: list[str] = strawberry.field(description="Queue slugs the group's members review.")
    missing_queues: list[str] = strawberry.field(
        description="Of those, the slugs no queue has (yet): members get nothing from them."
    )
    line: int = strawberry.field(description="Its line in the mapping file.")


@strawberry.type(
    description="Who a person from the OpenID provider is in Signoff (SIGNOFF_OIDC_CLAIMS_FILE). "
    "A person's role is the first matching line's; their queues those of every matching line."
)
class ClaimMapping:
    groups_claim: str = strawberry.field(description="The claim that holds a person's groups.")
    name_claims: list[str] = strawberry.field(
        description="The claims tried, in order, for the name Signoff shows."
    )
    groups: list[ClaimMappingGroup]

    @classmethod
    def from_read(cls, read: MappingRead) -> ClaimMapping:
        mapping = read.mapping
        return cls(
            groups_claim=mapping.groups_claim,
            name_claims=list(mapping.display_claims),
            groups=[
                ClaimMappingGroup(
                    group=grant.group,
                    role=grant.role,
                    queues=list(grant.queues),
                    missing_queues=[q for q in grant.queues if q not in read.existing_queues],
                    line=grant.line,
                )
                for grant in mapping.grants
            ],
        )
