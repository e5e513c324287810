"""What a job function finds in ``ctx``: the same shape under arq and the in-process runner."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import aiohttp

from signoff import __version__
from signoff.config import Settings
from signoff.constants import HTTP_CONNECTIONS
from signoff.database import SessionMaker, create_sessionmaker, read_only
from signoff.delivery import Jitter
from signoff.destinations import DestinationPolicy
from signoff.resolvers.core.work import JobQueue, WorkMaker

CTX_KEY = "signoff"


@dataclass
class WorkerServices:
    """Opened once per worker process: units of work (with the job queue, the event relay
    and the sealer), and one shared HTTP client."""

    settings: Settings
    work: WorkMaker
    http: aiohttp.ClientSession
    jitter: Jitter | None = None

    @property
    def sessionmaker(self) -> SessionMaker:
        return self.work.sessionmaker

    @functools.cached_property
    def read_sessionmaker(self) -> SessionMaker:
        """Sessions for reads only (on SQLite they never take the write lock)."""
        bind = self.sessionmaker.kw["bind"]
        return create_sessionmaker(read_only(bind))

    @property
    def jobs(self) -> JobQueue | None:
        return self.work.services.jobs


def open_http_client(
    destinations: DestinationPolicy,
    connections: int = HTTP_CONNECTIONS,
    *,
    resolver: aiohttp.abc.AbstractResolver | None = None,
) -> aiohttp.ClientSession:
    """One client for every delivery: pooled connections (one per delivery in flight), no
    redirects or environment proxies, each connection checked by ``destinations`` on the
    address it opens (``resolver``: the system's by default). aiohttp, not httpx: httpx's
    CPU per request would cap a worker far lower (docs/delivery-throughput.md).
    """
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(
            limit=connections,
            ttl_dns_cache=300,
            resolver=resolver,
            socket_factory=destinations.socket_factory,
        ),
        timeout=aiohttp.ClientTimeout(total=130.0, connect=10.0),
        trust_env=False,
        headers={"user-agent": f"signoff/{__version__}"},
    )


def services_of(ctx: dict[str, Any]) -> WorkerServices:
    services = ctx[CTX_KEY]
    assert isinstance(services, WorkerServices)
    return services
