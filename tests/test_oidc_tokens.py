"""Machine clients with the OpenID provider's access tokens (client-credentials grant),
against a real provider: a valid token stands for its client's actor, mapped through the
claim mapping; every forged or misdirected token is refused with a coded error and
changes nothing; new keys at the provider validate without a restart."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx import ASGITransport, AsyncClient
from joserfc import jws
from sqlalchemy import func
from sqlmodel import select
from starlette.applications import Starlette
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from signoff.config import Settings
from signoff.constants import OIDC_JWKS_REFETCH_SECONDS
from signoff.database import SessionMaker, create_sessionmaker
from signoff.errors import IdentityTokenRefused
from signoff.models import Actor, AuditEvent, OidcIdentity
from signoff.resolvers.access.provider import OpenIdProvider
from signoff.web.app import create_app
from tests.conftest import checked_once
from tests.helpers import CREATE_QUEUE, GraphQLClient
from tests.live import TRANSPORT_WS, Server, open_stream, open_transport_ws
from tests.oidc.provider import OTHER_AUDIENCE, TestProvider, signing_key

VIEWER = "query { viewer { actor { name role } queues { slug } } }"


@pytest.fixture
def provider(tmp_path: Path) -> Iterator[TestProvider]:
    idp = TestProvider(tmp_path / "idp")
    idp.start()
    yield idp
    idp.stop()


@pytest.fixture
async def oidc_app(
    settings: Settings, provider: TestProvider, clean_database: None
) -> AsyncIterator[Starlette]:
    application = create_app(dataclasses.replace(settings, oidc=provider.settings()))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def api(oidc_app: Starlette) -> AsyncIterator[GraphQLClient]:
    transport = ASGITransport(app=oidc_app)
    async with AsyncClient(transport=transport, base_url="http://signoff.test") as http:
        yield GraphQLClient(http, create_sessionmaker(oidc_app.state.engine))


async def _counts(sessionmaker: SessionMaker) -> tuple[int, int, int]:
    async with sessionmaker() as session:
        return (
            (await session.exec(select(func.count()).select_from(Actor))).one(),
            (await session.exec(select(func.count()).select_from(OidcIdentity))).one(),
            (await session.exec(select(func.count()).select_from(AuditEvent))).one(),
        )


@checked_once
async def test_a_client_token_stands_for_its_actor_made_on_first_use(
    api: GraphQLClient, provider: TestProvider
) -> None:
    token = await provider.client_token("agent-payments")
    viewer = (await api(VIEWER, token=token))["viewer"]
    assert viewer["actor"] == {"name": "agent-payments", "role": "AGENT"}
    # A new token of the same client is the same actor, not another one.
    again = await provider.client_token("agent-payments")
    assert (await api(VIEWER, token=again))["viewer"] == viewer
    actors, identities, _ = await _counts(api.sessionmaker)
    assert (actors, identities) == (1, 1)


@checked_once
async def test_the_mapped_role_is_what_the_token_may_do(
    api: GraphQLClient, provider: TestProvider
) -> None:
    ops = await provider.client_token("ops-bot")
    created = await api(CREATE_QUEUE, {"input": {"slug": "payments", "name": "Payments"}}, ops)
    assert created["createQueue"]["slug"] == "payments"
    agent = await provider.client_token("agent-payments")
    refused = await api.error(CREATE_QUEUE, {"input": {"slug": "x", "name": "X"}}, agent)
    assert refused.code == "FORBIDDEN"


@checked_once
async def test_a_client_in_no_mapped_group_is_refused(
    api: GraphQLClient, provider: TestProvider
) -> None:
    token = await provider.client_token("stranger")
    refused = await api.error(VIEWER, token=token)
    assert refused.code == "NO_MAPPED_GROUP"
    assert await _counts(api.sessionmaker) == (0, 0, 0)


def _part(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


def _hmac_with_public_key(provider: TestProvider) -> str:
    """The classic confusion: HS256 keyed with the provider's published RSA key (made by
    hand: joserfc itself will not use a public key as an HMAC secret)."""
    public = provider.keys[0].as_pem(private=False)
    claims = {"iss": provider.issuer, "aud": provider.settings().audience, "sub": "x"}
    claims |= {"groups": ["signoff-operators"], "exp": int(time.time()) + 300}
    header = {"alg": "HS256", "typ": "at+jwt", "kid": provider.keys[0].kid}
    signed = f"{_part(header)}.{_part(claims)}"
    mac = hmac.new(public, signed.encode(), hashlib.sha256).digest()
    return f"{signed}.{base64.urlsafe_b64encode(mac).decode().rstrip('=')}"


def _alg_none(provider: TestProvider) -> str:
    claims = {"iss": provider.issuer, "aud": provider.settings().audience, "sub": "ops-bot"}
    claims |= {"groups": ["signoff-operators"], "exp": int(time.time()) + 300}
    return f"{_part({'alg': 'none', 'typ': 'at+jwt'})}.{_part(claims)}."


@checked_once
async def test_forged_and_misdirected_tokens_are_refused_and_change_nothing(
    api: GraphQLClient, provider: TestProvider
) -> None:
    now = int(time.time())
    operators = {"groups": ["signoff-operators"], "sub": "ops-bot"}
    cases = {
        "audience": await provider.client_token("ops-bot", resource=OTHER_AUDIENCE),
        "issuer": provider.sign({**operators, "iss": "https://id.elsewhere.test"}),
        "expired": provider.sign({**operators, "iat": now - 900, "exp": now - 600}),
        "not_yet_valid": provider.sign({**operators, "nbf": now + 600}),
        "unknown_key": provider.sign(operators, key=signing_key("not-published")),
        "algorithm": _alg_none(provider),
        # An ID token (typ JWT) whose audience happens to be this service.
        "type": provider.sign(operators, typ="JWT"),
    }
    for reason, token in cases.items():
        refused = await api.error(CREATE_QUEUE, {"input": {"slug": reason, "name": "X"}}, token)
        assert (refused.code, refused.extensions.get("reason")) == (
            "IDENTITY_TOKEN_REFUSED",
            reason,
        ), reason
    hmac = await api.error(VIEWER, token=_hmac_with_public_key(provider))
    assert (hmac.code, hmac.extensions["reason"]) == ("IDENTITY_TOKEN_REFUSED", "algorithm")
    # The provider's own key, with a signature that does not match.
    good = provider.sign(operators)
    head, body, _ = good.split(".")
    tampered = f"{head}.{body}.{provider.sign({**operators, 'sub': 'other'}).split('.')[2]}"
    assert (await api.error(VIEWER, token=tampered)).extensions["reason"] == "signature"
    assert await _counts(api.sessionmaker) == (0, 0, 0)
    # The same claims, signed properly, are accepted.
    assert (await api(VIEWER, token=good))["viewer"]["actor"]["role"] == "OPERATOR"


@checked_once
async def test_new_keys_at_the_provider_validate_without_a_restart(
    api: GraphQLClient, provider: TestProvider
) -> None:
    first = await provider.client_token("agent-payments")
    assert (await api(VIEWER, token=first))["viewer"]["actor"]["role"] == "AGENT"
    read_keys_at = time.monotonic()
    provider.rotate("k2")
    rotated = await provider.client_token("agent-payments")
    assert jws.extract_compact(rotated.encode()).headers()["kid"] == "k2"
    # The key set is read again for an unknown key id once the last read is old enough.
    await asyncio.sleep(max(0.0, read_keys_at + OIDC_JWKS_REFETCH_SECONDS - time.monotonic()))
    assert (await api(VIEWER, token=rotated))["viewer"]["actor"]["role"] == "AGENT"
    # Tokens signed with the old key, still published, keep working until they expire.
    assert (await api(VIEWER, token=first))["viewer"]["actor"]["role"] == "AGENT"


@checked_once
async def test_a_key_set_lacking_a_key_id_is_read_again_at_most_so_often(
    provider: TestProvider,
) -> None:
    """Made-up key ids cannot make Signoff read the provider's keys on every request."""
    idp = OpenIdProvider(provider.settings())
    try:
        made_up = signing_key("made-up")
        token = await provider.client_token("agent-payments")
        await idp.verify_access_token(token)
        reads = idp.key_set_reads
        for _ in range(5):
            with pytest.raises(IdentityTokenRefused) as refused:
                await idp.verify_access_token(provider.sign({}, key=made_up))
            assert refused.value.details["reason"] == "unknown_key"
        # Within OIDC_JWKS_REFETCH_SECONDS of the last read: no read at all.
        assert idp.key_set_reads == reads
        provider.rotate("k2")
        await asyncio.sleep(OIDC_JWKS_REFETCH_SECONDS)
        rotated = await provider.client_token("agent-payments")
        assert (await idp.verify_access_token(rotated))["sub"] == "agent-payments"
        assert idp.key_set_reads == reads + 1
    finally:
        await idp.close()


@checked_once
async def test_a_websocket_authenticates_with_a_provider_token(
    serve: Callable[..., Awaitable[Server]], provider: TestProvider
) -> None:
    server = await serve(**provider.env())
    token = await provider.client_token("agent-payments")
    ws = await open_transport_ws(server.ws_url, {"authorization": f"Bearer {token}"})
    await ws.close()
    forged = provider.sign({}, key=signing_key("not-published"))
    async with connect(server.ws_url, subprotocols=[TRANSPORT_WS]) as refused:
        init = {"type": "connection_init", "payload": {"authorization": f"Bearer {forged}"}}
        await refused.send(json.dumps(init))
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(refused.recv(), timeout=10)
        assert refused.close_code == 4403


async def test_first_uses_at_once_make_one_actor(
    api: GraphQLClient, provider: TestProvider
) -> None:
    tokens = [await provider.client_token("agent-payments") for _ in range(4)]
    answers = await asyncio.gather(*(api(VIEWER, token=token) for token in tokens))
    assert {a["viewer"]["actor"]["name"] for a in answers} == {"agent-payments"}
    actors, identities, _ = await _counts(api.sessionmaker)
    assert (actors, identities) == (1, 1)


INCIDENTS = "subscription { incidentEvents { cursor kind } }"


async def _closed_at(server: Server, token: str) -> tuple[int | None, float]:
    """Open a subscription with ``token``; its close code and when it closed (epoch s)."""
    async with open_stream(server, token, INCIDENTS, {}) as stream:
        await stream.until(lambda s: s.ended, within=15)
        return stream.close_code, time.time()


@checked_once
async def test_a_stream_on_a_provider_token_ends_with_4403_at_its_exp(
    serve: Callable[..., Awaitable[Server]], provider: TestProvider
) -> None:
    """On each of two ``signoff serve``: not at the next re-read of the viewer, which the
    provider's leeway for clock skew (30 s) would still let pass."""
    servers = [await serve(**provider.env()), await serve(**provider.env())]
    expires = int(time.time()) + 4
    operator = {"sub": "ops-bot", "client_id": "ops-bot", "groups": ["signoff-operators"]}
    token = provider.sign({**operator, "exp": expires})
    ended = await asyncio.gather(*(_closed_at(server, token) for server in servers))
    for close_code, closed_at in ended:
        assert close_code == 4403
        assert abs(closed_at - expires) <= 1.0, closed_at - expires
        # The figure docs/security.md quotes ("Access that ends everywhere at once").
        logging.getLogger("tests.oidc").warning(
            "stream closed %+.3f s from its token's exp", closed_at - expires
        )


async def _event_stream_ended_at(server: Server, token: str) -> float:
    """Follow a subscription over Server-Sent Events with ``token``; when its stream ended."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    async with (
        httpx.AsyncClient(timeout=20) as http,
        http.stream(
            "POST", f"{server.url}/graphql", json={"query": INCIDENTS}, headers=headers
        ) as response,
    ):
        assert response.headers["content-type"].startswith("text/event-stream")
        async for _ in response.aiter_bytes():
            pass
    return time.time()


@checked_once
async def test_an_event_stream_on_a_provider_token_ends_at_its_exp(
    serve: Callable[..., Awaitable[Server]], provider: TestProvider
) -> None:
    """Over Server-Sent Events as over a websocket: the stream ends at the token's ``exp``."""
    server = await serve(**provider.env())
    expires = int(time.time()) + 4
    operator = {"sub": "ops-bot", "client_id": "ops-bot", "groups": ["signoff-operators"]}
    ended_at = await _event_stream_ended_at(server, provider.sign({**operator, "exp": expires}))
    assert abs(ended_at - expires) <= 1.0, ended_at - expires
