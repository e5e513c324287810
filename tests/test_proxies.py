"""Behind a proxy: ``X-Forwarded-For`` is believed only from ``SIGNOFF_TRUSTED_PROXIES``,
and a console request's origin is compared with ``SIGNOFF_PUBLIC_URL``, never with the
``Host`` its sender chose (docs/design.md section 10)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest
from starlette.requests import Request

from signoff.config import Settings, parse_networks
from signoff.constants import APPROVAL_LINK_RATE_LIMIT
from signoff.web.sign_in import same_origin
from tests.live import Server


async def _statuses(server: Server, addresses: list[str]) -> list[int]:
    """Open a made-up approval link once per address, each claimed in X-Forwarded-For."""
    async with httpx.AsyncClient(base_url=server.url) as http:
        return [
            (await http.get("/links/so_nothing", headers={"x-forwarded-for": address})).status_code
            for address in addresses
        ]


async def test_x_forwarded_for_counts_only_from_a_trusted_proxy(
    serve: Callable[..., Awaitable[Server]],
) -> None:
    many = [f"203.0.113.{i}" for i in range(APPROVAL_LINK_RATE_LIMIT + 1)]
    # Straight from a client on loopback: its claimed addresses are its own choice, so
    # they all count as one client, and the link rate limit holds.
    direct = await serve()
    assert (await _statuses(direct, many))[-1] == 429
    # Through a trusted proxy: each forwarded client has its own allowance.
    proxied = await serve(SIGNOFF_TRUSTED_PROXIES="127.0.0.1/32, ::1")
    assert 429 not in await _statuses(proxied, many)
    assert (await _statuses(proxied, ["198.51.100.7"] * len(many)))[-1] == 429


def _request(host: str, origin: str) -> Request:
    headers = [(b"host", host.encode()), (b"origin", origin.encode())]
    return Request({"type": "http", "scheme": "http", "path": "/graphql", "headers": headers})


def test_the_consoles_origin_is_the_public_url_not_the_host_header() -> None:
    settings = Settings(public_url="https://signoff.example")
    assert same_origin(_request("signoff.example", "https://signoff.example"), settings)
    # A rebound DNS name, or a proxy that passes Host on: the sender picks the Host.
    assert not same_origin(_request("evil.test", "http://evil.test"), settings)
    unset = Settings(host="127.0.0.1", port=8000)
    assert same_origin(_request("127.0.0.1:8000", "http://127.0.0.1:8000"), unset)
    assert not same_origin(_request("evil.test:8000", "http://evil.test:8000"), unset)


def test_trusted_proxies_are_addresses_or_networks() -> None:
    assert [str(n) for n in parse_networks("X", "10.0.0.0/8, 127.0.0.1 ::1")] == [
        "10.0.0.0/8",
        "127.0.0.1/32",
        "::1/128",
    ]
    with pytest.raises(ValueError, match="SIGNOFF_TRUSTED_PROXIES: 'proxy"):
        Settings.from_env({"SIGNOFF_TRUSTED_PROXIES": "proxy.internal"})
