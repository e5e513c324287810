"""The OpenID provider as Signoff reads it: its discovery document, its key set, and the
tokens it signs (checked with joserfc; none of the cryptography is written here).

The key set is kept and read again when a token names a key id it lacks (the provider
rotated its keys), at most once per ``OIDC_JWKS_REFETCH_SECONDS``, so tokens with made-up
key ids cannot make Signoff hammer the provider.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from authlib.common.security import generate_token
from authlib.integrations.httpx_client import AsyncOAuth2Client, OAuthError
from joserfc import jws, jwt
from joserfc.errors import (
    BadSignatureError,
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)
from joserfc.jwk import KeySet

from signoff.constants import (
    OIDC_ALGORITHMS,
    OIDC_HTTP_TIMEOUT_SECONDS,
    OIDC_JWKS_REFETCH_SECONDS,
    OIDC_LEEWAY_SECONDS,
    OIDC_METADATA_MAX_AGE_SECONDS,
)
from signoff.errors import IdentityProviderUnavailable, IdentityTokenRefused, SignInRefused
from signoff.oidc_settings import OidcSettings

# RFC 9068: a JWT access token says so in its header, so an ID token (whose audience is
# the client id, the audience's default) is never taken for one.
ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})


@dataclass(frozen=True)
class ProviderTokens:
    """What the provider's token endpoint answered the console's backend: the ID token
    (who signed in, their groups) and the refresh token (to read them again later)."""

    id_token: str
    refresh_token: str | None


@dataclass(frozen=True)
class AuthorizationRequest:
    """Where to send the browser, and what the callback must find again."""

    url: str
    state: str
    nonce: str
    code_verifier: str


@dataclass(frozen=True)
class Discovery:
    """The parts of ``/.well-known/openid-configuration`` that Signoff uses."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    end_session_endpoint: str | None

    @classmethod
    def read(cls, document: Mapping[str, Any], issuer: str) -> Discovery:
        if document.get("issuer") != issuer:
            raise IdentityProviderUnavailable(
                "The identity provider's discovery document names another issuer than "
                "SIGNOFF_OIDC_ISSUER."
            )
        try:
            return cls(
                issuer=issuer,
                authorization_endpoint=str(document["authorization_endpoint"]),
                token_endpoint=str(document["token_endpoint"]),
                jwks_uri=str(document["jwks_uri"]),
                end_session_endpoint=document.get("end_session_endpoint"),
            )
        except KeyError as missing:
            raise IdentityProviderUnavailable(
                f"The identity provider's discovery document lacks {missing.args[0]}."
            ) from None


class OpenIdProvider:
    """One provider (``SIGNOFF_OIDC_ISSUER``), shared by every request of a process."""

    def __init__(
        self,
        settings: OidcSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._wall_clock = wall_clock
        self._http = httpx.AsyncClient(timeout=OIDC_HTTP_TIMEOUT_SECONDS)
        self._lock = asyncio.Lock()
        self._discovery: tuple[float, Discovery] | None = None
        self._keys: tuple[float, KeySet] | None = None
        self.key_set_reads = 0  # how often the key set was read (for tests and logs)

    @property
    def http(self) -> httpx.AsyncClient:
        return self._http

    async def close(self) -> None:
        await self._http.aclose()

    async def discovery(self) -> Discovery:
        """The discovery document, read once an hour at most (or once per process)."""
        kept = self._discovery
        if kept is not None and self._clock() - kept[0] < OIDC_METADATA_MAX_AGE_SECONDS:
            return kept[1]
        async with self._lock:
            kept = self._discovery
            if kept is None or self._clock() - kept[0] >= OIDC_METADATA_MAX_AGE_SECONDS:
                url = f"{self.settings.issuer.rstrip('/')}/.well-known/openid-configuration"
                document = await self.get_json(url)
                kept = self._discovery = (
                    self._clock(),
                    Discovery.read(document, self.settings.issuer),
                )
            return kept[1]

    async def get_json(self, url: str) -> Mapping[str, Any]:
        """A JSON object from the provider; anything else is ``IDENTITY_PROVIDER_UNAVAILABLE``."""
        try:
            response = await self._http.get(url, headers={"accept": "application/json"})
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError):
            raise IdentityProviderUnavailable() from None
        if not isinstance(document, dict):
            raise IdentityProviderUnavailable()
        return document

    def _client(self, redirect_uri: str | None = None) -> AsyncOAuth2Client:
        """Authlib's OAuth 2 client (PKCE with S256), for one exchange."""
        return AsyncOAuth2Client(
            client_id=self.settings.client_id,
            client_secret=self.settings.client_secret,
            redirect_uri=redirect_uri,
            scope="openid profile email groups offline_access",
            code_challenge_method="S256",
            timeout=OIDC_HTTP_TIMEOUT_SECONDS,
        )

    async def authorization_request(self, redirect_uri: str) -> AuthorizationRequest:
        """A new Authorization Code request with PKCE, a state and a nonce."""
        discovery = await self.discovery()
        verifier = generate_token(64)
        nonce = generate_token(32)
        async with self._client(redirect_uri) as client:
            url, state = client.create_authorization_url(
                discovery.authorization_endpoint, code_verifier=verifier, nonce=nonce
            )
        return AuthorizationRequest(url=url, state=state, nonce=nonce, code_verifier=verifier)

    async def exchange_code(
        self, *, code: str, code_verifier: str, redirect_uri: str
    ) -> ProviderTokens:
        """The code for tokens; a code the provider refuses (used already, or not for
        this verifier) is ``SIGN_IN_REFUSED``."""
        discovery = await self.discovery()
        async with self._client(redirect_uri) as client:
            answer = await self._token_call(
                client.fetch_token(
                    discovery.token_endpoint,
                    grant_type="authorization_code",
                    code=code,
                    code_verifier=code_verifier,
                )
            )
        return answer

    async def refresh(self, refresh_token: str) -> ProviderTokens:
        """Read the directory again: the refresh token for a new ID token."""
        discovery = await self.discovery()
        async with self._client() as client:
            return await self._token_call(
                client.refresh_token(discovery.token_endpoint, refresh_token=refresh_token)
            )

    async def _token_call(self, call: Awaitable[Mapping[str, Any]]) -> ProviderTokens:
        try:
            answer = await call
        except OAuthError as exc:
            raise SignInRefused(
                f"The identity provider refused: {exc.error or 'no reason given'}.",
                reason=exc.error,
            ) from None
        except (httpx.HTTPError, ValueError):
            raise IdentityProviderUnavailable() from None
        id_token = answer.get("id_token")
        if not isinstance(id_token, str):
            raise IdentityProviderUnavailable("The identity provider sent no ID token.")
        refresh_token = answer.get("refresh_token")
        return ProviderTokens(
            id_token=id_token,
            refresh_token=refresh_token if isinstance(refresh_token, str) else None,
        )

    async def end_session_url(
        self, id_token: str | None, post_logout_redirect_uri: str
    ) -> str | None:
        """The provider's end-session endpoint, for the browser (none if it has none)."""
        discovery = await self.discovery()
        if discovery.end_session_endpoint is None:
            return None
        query = {
            "client_id": self.settings.client_id,
            "post_logout_redirect_uri": post_logout_redirect_uri,
        }
        if id_token is not None:
            query["id_token_hint"] = id_token
        return str(httpx.URL(discovery.end_session_endpoint, params=query))

    async def verify_access_token(self, token: str) -> dict[str, Any]:
        """The claims of an API access token: an ``at+jwt`` for ``SIGNOFF_OIDC_AUDIENCE``."""
        return await self.verify(token, audience=self.settings.audience, access_token=True)

    async def verify(
        self, token: str, *, audience: str, access_token: bool = False
    ) -> dict[str, Any]:
        """A token's claims once its signature, issuer, audience and times check out;
        otherwise ``IDENTITY_TOKEN_REFUSED`` with the reason."""
        header = _header(token)
        algorithm = header.get("alg")
        if algorithm not in OIDC_ALGORITHMS:
            raise IdentityTokenRefused(
                f"Tokens signed with {algorithm!r} are not accepted; the provider's keys "
                f"sign with one of {', '.join(OIDC_ALGORITHMS)}.",
                reason="algorithm",
            )
        if access_token and str(header.get("typ", "")).lower() not in ACCESS_TOKEN_TYPES:
            raise IdentityTokenRefused(
                "This is not an access token (its header's typ is not at+jwt).", reason="type"
            )
        key_set = await self._key_set_with(header.get("kid"))
        try:
            decoded = jwt.decode(token, key_set, algorithms=[str(algorithm)])
        except BadSignatureError:
            raise IdentityTokenRefused(
                "The token's signature does not match the provider's key.", reason="signature"
            ) from None
        except JoseError:
            raise IdentityTokenRefused(
                "The token cannot be verified with the provider's keys.", reason="signature"
            ) from None
        self._check_claims(decoded.claims, audience)
        return dict(decoded.claims)

    def _check_claims(self, claims: Mapping[str, Any], audience: str) -> None:
        registry = jwt.JWTClaimsRegistry(
            now=int(self._wall_clock()),
            leeway=OIDC_LEEWAY_SECONDS,
            iss={"essential": True, "value": self.settings.issuer},
            aud={"essential": True, "value": audience},
            sub={"essential": True},
            exp={"essential": True},
        )
        try:
            registry.validate(dict(claims))
        except ExpiredTokenError:
            raise IdentityTokenRefused("The token has expired.", reason="expired") from None
        except InvalidClaimError as exc:
            raise _claim_refused(exc.claim) from None
        except MissingClaimError as exc:
            raise IdentityTokenRefused(
                f"The token lacks its {exc.claim} claim.", reason="malformed"
            ) from None

    async def _key_set_with(self, kid: object) -> KeySet:
        """The provider's key set, read again if it lacks ``kid`` (and was not just read)."""
        keys = await self._key_set(fresh=False)
        if kid is None or _has(keys, str(kid)):
            return keys
        keys = await self._key_set(fresh=True)
        if not _has(keys, str(kid)):
            raise IdentityTokenRefused(
                "The token is signed with a key the provider does not publish.",
                reason="unknown_key",
            )
        return keys

    async def _key_set(self, *, fresh: bool) -> KeySet:
        async with self._lock:
            kept = self._keys
            if kept is not None:
                age = self._clock() - kept[0]
                wanted = fresh and age >= OIDC_JWKS_REFETCH_SECONDS
                if age < OIDC_METADATA_MAX_AGE_SECONDS and not wanted:
                    return kept[1]
        discovery = await self.discovery()
        self.key_set_reads += 1
        document = await self.get_json(discovery.jwks_uri)
        try:
            keys = KeySet.import_key_set(document)  # type: ignore[arg-type]
        except (JoseError, ValueError, KeyError, TypeError):
            raise IdentityProviderUnavailable(
                "The identity provider's key set cannot be read."
            ) from None
        async with self._lock:
            self._keys = (self._clock(), keys)
        return keys


def _header(token: str) -> dict[str, Any]:
    try:
        header = jws.extract_compact(token.encode("ascii")).headers()
    except (JoseError, ValueError, UnicodeError):
        raise IdentityTokenRefused("The token is not a signed JWT.", reason="malformed") from None
    return dict(header)


def _has(keys: KeySet, kid: str) -> bool:
    return any(key.kid == kid for key in keys)


def _claim_refused(claim: str) -> IdentityTokenRefused:
    if claim == "iss":
        return IdentityTokenRefused(
            "The token was issued by another provider than SIGNOFF_OIDC_ISSUER.", reason="issuer"
        )
    if claim == "aud":
        return IdentityTokenRefused(
            "The token is meant for another audience than this service.", reason="audience"
        )
    if claim in {"nbf", "iat"}:
        return IdentityTokenRefused("The token is not valid yet.", reason="not_yet_valid")
    return IdentityTokenRefused(f"The token's {claim} claim is not valid.", reason="malformed")
