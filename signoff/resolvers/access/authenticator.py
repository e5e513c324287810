"""Who a request is: the one entry point for every way in (HTTP, websockets, live
subscriptions re-reading their viewer).

A Signoff API token (``so_…``) is looked up as always. With an OpenID provider
configured, a console session's token (``sos_…``, from its cookie) stands for its
signed-in reviewer, and any other bearer token is taken for the provider's JWT access
token: validated, mapped through the claim mapping, it stands for its subject's actor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable

from signoff.constants import CONSOLE_SESSION_PREFIX, TOKEN_PREFIX
from signoff.database import SessionMaker
from signoff.errors import Unauthenticated
from signoff.resolvers.access.actors import authenticate_in
from signoff.resolvers.access.identities import claimed, sign_in
from signoff.resolvers.access.provider import OpenIdProvider
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.access.sessions import session_viewer
from signoff.resolvers.core.work import WorkMaker

# Called once the token is known good and before the database is read (an HTTP
# operation's turn at the database: never held across a call to the provider).
BeforeRead = Callable[[], Awaitable[None]]


class Authenticator:
    """Token -> viewer, for API tokens and (when configured) the provider's tokens."""

    def __init__(
        self,
        work: WorkMaker,
        read_sessionmaker: SessionMaker,
        provider: OpenIdProvider | None = None,
    ) -> None:
        self.work = work
        self.read_sessionmaker = read_sessionmaker
        self.provider = provider

    async def viewer(self, token: str | None, before_read: BeforeRead | None = None) -> Viewer:
        """The viewer ``token`` stands for; ``UNAUTHENTICATED`` (or a subclass) if none."""
        if token is None or self.provider is None or token.startswith(TOKEN_PREFIX):
            if before_read is not None:
                await before_read()
            return await authenticate_in(self.read_sessionmaker, token)
        provider = self.provider
        if token.startswith(CONSOLE_SESSION_PREFIX):
            if before_read is not None:
                await before_read()
            sealer = self.work.services.sealer
            assert sealer is not None  # every API process has one (signoff.config.load_sealer)
            return await session_viewer(
                work=self.work, provider=provider, sealer=sealer, token=token
            )
        if token.count(".") != 2:
            raise Unauthenticated("The API token is not valid.")
        claims = await provider.verify_access_token(token)
        who = claimed(provider.settings.issuer, claims, provider.settings.mapping)
        if before_read is not None:
            await before_read()
        viewer, _ = await sign_in(work=self.work, who=who)
        # A stream it opens ends at ``exp`` exactly (``Connection.end_at``), not at a
        # later re-read, which the provider's leeway for clock skew would still let pass.
        return dataclasses.replace(viewer, expires_at=float(claims["exp"]))

    async def close(self) -> None:
        if self.provider is not None:
            await self.provider.close()
