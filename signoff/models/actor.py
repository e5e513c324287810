"""Actors, their API tokens and their queue memberships."""

from __future__ import annotations

import hashlib
from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import enum_field, fk_field, id_field, time_field

# Person keys (``person_of``, ``oidc_person``) are a short prefix and a hash or an id.
PERSON_MAX_CHARS = 80


class Role(StrEnum):
    AGENT = "agent"
    REVIEWER = "reviewer"
    OPERATOR = "operator"
    INTEGRATION = "integration"
    ADMIN = "admin"


class ActorAccess(StrEnum):
    """Whether the actor's tokens authenticate; stored as ``disabled_at``."""

    ENABLED = "ENABLED"
    DISABLED = "DISABLED"


class TokenState(StrEnum):
    """An API token's life; stored as ``revoked_at``."""

    LIVE = "LIVE"
    REVOKED = "REVOKED"


class Actor(SQLModel, table=True):
    __tablename__ = "actors"
    __table_args__ = (sa.Index("uq_actors_slack_user_id", "slack_user_id", unique=True),)

    id: str = id_field()
    name: str = Field(sa_column=sa.Column(sa.String(200), nullable=False, unique=True))
    role: Role = enum_field()
    created_at: datetime = time_field(default_now=True)
    # Set while the actor is disabled: its tokens are refused, and kept for when it is enabled.
    disabled_at: datetime | None = time_field(nullable=True)
    # The Slack user who decides as this actor from Slack messages (an admin links them).
    slack_user_id: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(32), nullable=True)
    )
    # The person behind the actor (``person_of``): actors that share it are one person, who
    # has one vote in a quorum and is its proposer's or amender's self for four eyes.
    person: str | None = Field(
        default=None, sa_column=sa.Column(sa.String(PERSON_MAX_CHARS), nullable=True, index=True)
    )


def person_of(actor_id: str, person: str | None) -> str:
    """The person an actor stands for: its ``person`` key, or, not linked, itself alone."""
    return person if person is not None else f"actor:{actor_id}"


def oidc_person(issuer: str, subject: str) -> str:
    """The person key of whoever the provider ``issuer`` knows as ``subject`` (fixed length,
    so that an issuer's long URL fits)."""
    return "oidc:" + hashlib.sha256(f"{issuer} {subject}".encode()).hexdigest()


class ApiToken(SQLModel, table=True):
    """A bearer token, stored as its SHA-256 hash; the token itself is shown once."""

    __tablename__ = "api_tokens"

    id: str = id_field()
    actor_id: str = fk_field("actors.id")
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    created_at: datetime = time_field(default_now=True)
    revoked_at: datetime | None = time_field(nullable=True)


class QueueMembership(SQLModel, table=True):
    __tablename__ = "queue_memberships"

    queue_id: str = Field(
        sa_column=sa.Column(sa.String(36), sa.ForeignKey("queues.id"), primary_key=True)
    )
    actor_id: str = Field(
        sa_column=sa.Column(sa.String(36), sa.ForeignKey("actors.id"), primary_key=True, index=True)
    )
    created_at: datetime = time_field(default_now=True)


class OidcIdentity(SQLModel, table=True):
    """Who an actor is at an OpenID provider: its ``iss`` and ``sub``, which never change
    while a display name or an email may."""

    __tablename__ = "oidc_identities"
    __table_args__ = (
        sa.UniqueConstraint("issuer", "subject", name="uq_oidc_identities_subject"),
        sa.Index("ix_oidc_identities_email_hash", "email_hash"),
    )

    id: str = id_field()
    actor_id: str = fk_field("actors.id")
    issuer: str = Field(sa_column=sa.Column(sa.String(2048), nullable=False))
    subject: str = Field(sa_column=sa.Column(sa.String(255), nullable=False))
    created_at: datetime = time_field(default_now=True)
    # ``email_hash`` of the address the provider last said it verified (none: it said of
    # none): how a Slack user with no explicit link is found (docs/slack.md).
    email_hash: str | None = Field(default=None, sa_column=sa.Column(sa.String(64), nullable=True))


def email_hash(address: str) -> str:
    """An email address as stored: SHA-256 of it trimmed and lower-cased. Signoff only
    compares addresses, never mails or shows these, so the table lists none."""
    return hashlib.sha256(address.strip().lower().encode()).hexdigest()


class ConsoleSession(SQLModel, table=True):
    """A reviewer signed in to the console through the provider. The browser holds only
    the session's token (stored here as its hash; its CSRF token is derived from it); the
    provider's refresh token is sealed."""

    __tablename__ = "console_sessions"

    id: str = id_field()
    actor_id: str = fk_field("actors.id")
    identity_id: str = fk_field("oidc_identities.id")
    token_hash: str = Field(sa_column=sa.Column(sa.String(64), nullable=False, unique=True))
    refresh_token: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    id_token: str | None = Field(default=None, sa_column=sa.Column(sa.Text, nullable=True))
    created_at: datetime = time_field(default_now=True)
    # When the directory (the provider's claims) was last read for this session.
    refreshed_at: datetime = time_field(default_now=True)
    ended_at: datetime | None = time_field(nullable=True)
