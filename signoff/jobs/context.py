"""What a job function finds in ``ctx``: the same shape under arq and the in-process runner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from signoff import __version__
from signoff.config import Settings
from signoff.database import SessionMaker
from signoff.delivery import Jitter
from signoff.resolvers.work import JobQueue, WorkMaker

CTX_KEY = "signoff"


@dataclass
class Services:
    """Opened once per worker process: units of work (with the job queue, the event relay
    and the sealer), and one shared HTTP client."""

    settings: Settings
    work: WorkMaker
    http: httpx.AsyncClient
    jitter: Jitter | None = None

    @property
    def sessionmaker(self) -> SessionMaker:
        return self.work.sessionmaker

    @property
    def jobs(self) -> JobQueue | None:
        return self.work.services.jobs


def open_http_client() -> httpx.AsyncClient:
    """One client for every delivery: pooled connections, no redirects, no environment proxies.

    Per-target timeouts are applied around each request; this is only the outer bound.
    """
    return httpx.AsyncClient(
        timeout=httpx.Timeout(130.0, connect=10.0),
        follow_redirects=False,
        trust_env=False,
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        headers={"user-agent": f"signoff/{__version__}"},
    )


def services_of(ctx: dict[str, Any]) -> Services:
    services = ctx[CTX_KEY]
    assert isinstance(services, Services)
    return services
