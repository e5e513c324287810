"""Console sessions: a reviewer signed in through the OpenID provider.

The browser holds the session's token in an ``HttpOnly`` cookie, never a provider token.
The session reads the directory again (a refresh at the provider) at most once per
``SIGNOFF_OIDC_SESSION_SECONDS``; a refresh that fails, or that finds no mapped group
any more, ends the session, and with it every live subscription that presented it.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import update
from sqlmodel import col, select

from signoff import clock
from signoff.constants import CONSOLE_SESSION_PREFIX
from signoff.errors import ActorDisabled, SignoffError, Unauthenticated
from signoff.evidence.sealing import Sealer
from signoff.models import Actor, ChangeKind, ConsoleSession, OidcIdentity, QueueMembership
from signoff.resolvers.access.actors import hash_token
from signoff.resolvers.access.identities import claimed, sign_in
from signoff.resolvers.access.provider import OpenIdProvider, ProviderTokens
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.core.actor_lifecycle import ACTOR_ACCESS
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import WorkMaker

ENDED = "Your console session has ended; sign in again."


def csrf_of(token: str) -> str:
    """The session's CSRF token: known to its pages (they read it from Signoff), never to
    another site, which cannot read the ``HttpOnly`` cookie it derives from."""
    return hashlib.sha256(f"signoff-csrf:{token}".encode()).hexdigest()


@dataclass(frozen=True)
class NewSession:
    token: str
    viewer: Viewer


async def start_session(
    *,
    work: WorkMaker,
    provider: OpenIdProvider,
    tokens: ProviderTokens,
    nonce: str,
    sealer: Sealer,
) -> NewSession:
    """After the code exchange: check the ID token (and its nonce), bring the actor in
    line with the directory, and open a session."""
    claims = await provider.verify(tokens.id_token, audience=provider.settings.client_id)
    if claims.get("nonce") != nonce:
        raise Unauthenticated("The identity provider's answer is not for this sign-in.")
    who = claimed(provider.settings.issuer, claims, provider.settings.mapping)
    viewer, identity = await sign_in(work=work, who=who)
    token = CONSOLE_SESSION_PREFIX + secrets.token_urlsafe(32)
    async with work() as unit:
        row = ConsoleSession(
            actor_id=viewer.id,
            identity_id=identity.id,
            token_hash=hash_token(token),
            refresh_token=_seal(sealer, tokens.refresh_token),
            id_token=tokens.id_token,
        )
        unit.session.add(row)
        await unit.session.flush()
        record(unit, _happened(viewer.id, row.id, "actor.console_signed_in"))
        await unit.commit()
    return NewSession(token=token, viewer=viewer)


async def session_viewer(
    *, work: WorkMaker, provider: OpenIdProvider, sealer: Sealer, token: str
) -> Viewer:
    """The viewer of a live session; the directory is read again when it is due."""
    row = await _live_session(work, token)
    due = row.refreshed_at + timedelta(seconds=provider.settings.session_seconds)
    if clock.now() < due or not await _take_refresh(work, row):
        return await _viewer_of(work, row)
    try:
        if row.refresh_token is None:
            raise Unauthenticated("The identity provider gave this session no refresh token.")
        tokens = await provider.refresh(sealer.open(row.refresh_token))
        claims = await provider.verify(tokens.id_token, audience=provider.settings.client_id)
        who = claimed(provider.settings.issuer, claims, provider.settings.mapping)
        if who.subject != (await _subject_of(work, row)):
            raise Unauthenticated("The identity provider answered for someone else.")
        viewer, _ = await sign_in(work=work, who=who)
    except SignoffError as failure:
        await end_session(work=work, token=token, reason="refresh_failed")
        raise Unauthenticated(f"{ENDED} ({failure.code}: {failure.message})") from None
    async with work() as unit:
        await unit.session.exec(
            update(ConsoleSession)
            .where(col(ConsoleSession.id) == row.id)
            .values(
                refresh_token=_seal(sealer, tokens.refresh_token) or row.refresh_token,
                id_token=tokens.id_token,
            )
        )
        await unit.commit()
    return viewer


async def end_session(
    *, work: WorkMaker, token: str, reason: str = "signed_out"
) -> ConsoleSession | None:
    """End the session (sign-out, or a failed refresh); the ended row, or ``None`` when
    it had ended already."""
    async with work() as unit:
        ended = (
            await unit.session.exec(
                update(ConsoleSession)
                .where(
                    col(ConsoleSession.token_hash) == hash_token(token),
                    col(ConsoleSession.ended_at).is_(None),
                )
                .values(ended_at=clock.now())
                .returning(ConsoleSession)
            )
        ).first()
        if ended is None:
            return None
        row: ConsoleSession = ended[0]
        actor = await unit.session.get(Actor, row.actor_id)
        assert actor is not None  # sessions reference their actor
        # An access change: every process forgets the session's viewer, and its live
        # subscriptions read it again now (and end), as for a revoked API token.
        await ACTOR_ACCESS.announce(
            unit,
            actor,
            kind=ChangeKind.ACTOR_TOKEN_REVOKED,
            action="actor.console_signed_out",
            actor_id=actor.id,
            details={"session_id": row.id, "reason": reason},
        )
        await unit.commit()
    return row


async def _live_session(work: WorkMaker, token: str) -> ConsoleSession:
    async with work.sessionmaker() as session:
        row = (
            await session.exec(
                select(ConsoleSession).where(
                    ConsoleSession.token_hash == hash_token(token),
                    col(ConsoleSession.ended_at).is_(None),
                )
            )
        ).first()
    if row is None:
        raise Unauthenticated(ENDED)
    return row


async def _take_refresh(work: WorkMaker, row: ConsoleSession) -> bool:
    """Compare-and-set on ``refreshed_at``: of the requests that find the session due at
    once (in any process), one refreshes it; the others go on with the viewer as it is."""
    async with work() as unit:
        taken = (
            await unit.session.exec(
                update(ConsoleSession)
                .where(
                    col(ConsoleSession.id) == row.id,
                    col(ConsoleSession.refreshed_at) == row.refreshed_at,
                )
                .values(refreshed_at=clock.now())
                .returning(col(ConsoleSession.id))
            )
        ).first()
        await unit.commit()
    return taken is not None


async def _viewer_of(work: WorkMaker, row: ConsoleSession) -> Viewer:
    async with work.sessionmaker() as session:
        actor = await session.get(Actor, row.actor_id)
        assert actor is not None  # sessions reference their actor
        queue_ids = (
            await session.exec(
                select(QueueMembership.queue_id).where(QueueMembership.actor_id == actor.id)
            )
        ).all()
        session.expunge(actor)
    if actor.disabled_at is not None:
        raise ActorDisabled(f"{actor.name} is disabled; an operator can enable it.")
    return Viewer(actor=actor, queue_ids=frozenset(queue_ids))


async def _subject_of(work: WorkMaker, row: ConsoleSession) -> str:
    async with work.sessionmaker() as session:
        identity = await session.get(OidcIdentity, row.identity_id)
    assert identity is not None
    return identity.subject


def _seal(sealer: Sealer, value: str | None) -> str | None:
    return None if value is None else sealer.seal(value)


def _happened(actor_id: str, session_id: str, action: str, **details: object) -> Happening:
    return Happening(
        entity_type="actor",
        entity_id=actor_id,
        actor_id=actor_id,
        action=action,
        details={"session_id": session_id, **details},
    )
