"""Sign-in with an OpenID provider: its settings and the claim mapping file.

The mapping says who a person (or a machine client) from the provider is in Signoff:
which claim holds their groups, and for each group a role and the queues it reviews.
It is read and checked when a process starts; an error names the file and the line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from signoff.models import Role

# A queue slug, as queues are created (signoff.resolvers.approval.queues).
QUEUE_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
# Claims that name someone for display, in the order tried when the file names none.
DISPLAY_CLAIMS = ("name", "email", "preferred_username", "client_id", "sub")


@dataclass(frozen=True)
class GroupGrant:
    """One line of the mapping: members of ``group`` are ``role`` in ``queues``."""

    group: str
    role: Role
    queues: tuple[str, ...]
    line: int


@dataclass(frozen=True)
class Grant:
    """What someone's groups give them: the role of the first line that matches (the
    file's order is its priority) and the queues of every line that matches."""

    role: Role
    queues: frozenset[str]


@dataclass(frozen=True)
class ClaimMapping:
    groups_claim: str = "groups"
    display_claims: tuple[str, ...] = DISPLAY_CLAIMS
    grants: tuple[GroupGrant, ...] = ()

    def grant(self, claims: Mapping[str, object]) -> Grant | None:
        """What the claims give, or ``None`` when no group of theirs is in the mapping."""
        groups = self.groups_of(claims)
        matched = [g for g in self.grants if g.group in groups]
        if not matched:
            return None
        return Grant(role=matched[0].role, queues=frozenset(q for g in matched for q in g.queues))

    def groups_of(self, claims: Mapping[str, object]) -> frozenset[str]:
        """The groups claim as a set: a list of strings, or one string."""
        value = claims.get(self.groups_claim)
        if isinstance(value, str):
            return frozenset({value})
        if isinstance(value, list):
            return frozenset(v for v in value if isinstance(v, str))
        return frozenset()

    def display_name(self, claims: Mapping[str, object]) -> str:
        """How Signoff names someone: the first display claim that is a non-empty string."""
        for claim in self.display_claims:
            value = claims.get(claim)
            if isinstance(value, str) and value.strip():
                return value.strip()
        return str(claims.get("sub", ""))


class ClaimMappingError(ValueError):
    """The claim mapping file cannot be used; the message names the file and the line."""


def parse_claim_mapping(text: str, source: str = "claim mapping") -> ClaimMapping:
    """Read a mapping: ``groups-claim <claim>``, ``name-claims <claim> ...`` and lines
    ``<group> <role> [<queue> ...]``; ``#`` starts a comment."""
    groups_claim = "groups"
    display: tuple[str, ...] = DISPLAY_CLAIMS
    grants: list[GroupGrant] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{source} line {number}"
        head, rest = words[0], words[1:]
        if head == "groups-claim":
            groups_claim = _one_word(rest, where, head)
        elif head == "name-claims":
            if not rest:
                raise ClaimMappingError(f"{where}: name-claims needs at least one claim")
            display = tuple(rest)
        else:
            grants.append(_grant(head, rest, where, number, seen))
    if not grants:
        raise ClaimMappingError(
            f"{source}: no group is mapped; add a line like "
            "`signoff-payments-reviewers reviewer payments`"
        )
    return ClaimMapping(groups_claim=groups_claim, display_claims=display, grants=tuple(grants))


def _one_word(rest: Sequence[str], where: str, head: str) -> str:
    if len(rest) != 1:
        raise ClaimMappingError(f"{where}: {head} takes exactly one claim name")
    return rest[0]


def _grant(
    group: str, rest: Sequence[str], where: str, number: int, seen: dict[str, int]
) -> GroupGrant:
    if group in seen:
        raise ClaimMappingError(f"{where}: group {group} is mapped already on line {seen[group]}")
    if not rest:
        raise ClaimMappingError(
            f"{where}: group {group} needs a role ({', '.join(r.value for r in Role)})"
        )
    try:
        role = Role(rest[0])
    except ValueError:
        raise ClaimMappingError(
            f"{where}: {rest[0]!r} is not a role ({', '.join(r.value for r in Role)})"
        ) from None
    for slug in rest[1:]:
        if not QUEUE_SLUG.match(slug):
            raise ClaimMappingError(f"{where}: {slug!r} is not a queue slug")
    seen[group] = number
    return GroupGrant(group=group, role=role, queues=tuple(rest[1:]), line=number)


def load_claim_mapping(path: str) -> ClaimMapping:
    """Read and check the mapping file at ``path``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ClaimMappingError(
            f"SIGNOFF_OIDC_CLAIMS_FILE: cannot read {path} ({exc.strerror})"
        ) from None
    return parse_claim_mapping(text, path)


@dataclass(frozen=True)
class OidcSettings:
    """``SIGNOFF_OIDC_*``: the provider, this service's client at it, and the mapping."""

    issuer: str
    client_id: str
    client_secret: str | None = None
    # What API access tokens must name in ``aud``.
    audience: str = ""
    # How often a console session reads the directory again (its groups) at most.
    session_seconds: int = 3600
    mapping: ClaimMapping = field(default_factory=ClaimMapping)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OidcSettings | None:
        """``None`` when ``SIGNOFF_OIDC_ISSUER`` is unset: sign-in stays as it was."""
        # Kept as given: ``iss`` must equal it exactly, trailing slash and all (Auth0's has one).
        issuer = env.get("SIGNOFF_OIDC_ISSUER", "").strip()
        if not issuer:
            return None
        scheme, _, rest = issuer.partition("://")
        if scheme not in {"http", "https"} or not rest:
            raise ValueError(f"SIGNOFF_OIDC_ISSUER: {issuer!r} is not a URL like https://host")
        client_id = env.get("SIGNOFF_OIDC_CLIENT_ID", "").strip()
        if not client_id:
            raise ValueError("SIGNOFF_OIDC_ISSUER is set: set SIGNOFF_OIDC_CLIENT_ID too")
        claims_file = env.get("SIGNOFF_OIDC_CLAIMS_FILE", "").strip()
        if not claims_file:
            raise ValueError(
                "SIGNOFF_OIDC_ISSUER is set: set SIGNOFF_OIDC_CLAIMS_FILE to the claim "
                "mapping (which groups are which role, in which queues)"
            )
        session_seconds = int(env.get("SIGNOFF_OIDC_SESSION_SECONDS", str(cls.session_seconds)))
        if session_seconds <= 0:
            raise ValueError("SIGNOFF_OIDC_SESSION_SECONDS must be a positive number of seconds")
        return cls(
            issuer=issuer,
            client_id=client_id,
            client_secret=env.get("SIGNOFF_OIDC_CLIENT_SECRET") or None,
            audience=env.get("SIGNOFF_OIDC_AUDIENCE", "").strip() or client_id,
            session_seconds=session_seconds,
            mapping=load_claim_mapping(claims_file),
        )
