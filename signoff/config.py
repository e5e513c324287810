"""Settings read from ``SIGNOFF_*`` environment variables.

No variable set means the embedded default: a SQLite file ``./signoff.db``, an
in-process event hub and an in-process job runner.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from signoff import sealing
from signoff.constants import (
    ARQ_QUEUE_DEFAULT,
    DELIVERY_CONCURRENCY,
    DELIVERY_LEASE_SECONDS,
    JOB_TIMEOUT_SECONDS,
    RECONCILE_INTERVAL_SECONDS,
    SWEEP_INTERVAL_SECONDS,
    WORKER_MAX_JOBS,
)
from signoff.sealing import Sealer

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./signoff.db"


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    max_body_bytes: int = 1_048_576
    # SQLite: how long a write waits for the write lock before DATABASE_BUSY.
    sqlite_busy_timeout_ms: int = 30_000
    graphiql: bool = True
    # Seals webhook signing secrets at rest (signoff.sealing); every process sharing a
    # database needs the same key. Unset: a key file, created on first use.
    secret_key: str | None = None
    secret_key_file: str = "signoff.key"
    arq_queue: str = ARQ_QUEUE_DEFAULT
    delivery_lease_seconds: int = DELIVERY_LEASE_SECONDS
    sweep_interval_seconds: int = SWEEP_INTERVAL_SECONDS
    reconcile_interval_seconds: int = RECONCILE_INTERVAL_SECONDS
    worker_max_jobs: int = WORKER_MAX_JOBS
    # Deliveries one worker process has in flight at once (and its HTTP connections).
    delivery_concurrency: int = DELIVERY_CONCURRENCY
    # arq's job timeout; a job taken by a worker that died is run again this long (+10 s) later.
    job_timeout_seconds: int = JOB_TIMEOUT_SECONDS
    # Without Redis, `signoff serve` runs deliveries in-process unless this is off.
    embedded_worker: bool = True
    # Live events (docs/design.md section 8).
    events_channel: str = "signoff:events"
    subscriber_buffer: int = 256
    events_relay_seconds: float = 1.0
    events_retention_days: float = 7.0
    events_auth_refresh_seconds: float = 30.0
    # A token's viewer is kept this long between reads on API requests (0: every request).
    auth_cache_seconds: float = 2.0
    # Compression state is kept per connection (tens of KiB each): off unless asked for.
    ws_per_message_deflate: bool = False
    # `signoff worker`: serve Prometheus metrics on this port (unset: no metrics server).
    # API processes always serve them at /metrics on their own port.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from the environment, normalising database URLs to async drivers."""
        env = os.environ if environ is None else environ
        return cls(
            database_url=normalise_database_url(
                env.get("SIGNOFF_DATABASE_URL") or DEFAULT_DATABASE_URL
            ),
            redis_url=env.get("SIGNOFF_REDIS_URL") or None,
            host=env.get("SIGNOFF_HOST", cls.host),
            port=int(env.get("SIGNOFF_PORT", str(cls.port))),
            log_level=env.get("SIGNOFF_LOG_LEVEL", cls.log_level).lower(),
            max_body_bytes=int(env.get("SIGNOFF_MAX_BODY_BYTES", str(cls.max_body_bytes))),
            sqlite_busy_timeout_ms=int(
                env.get("SIGNOFF_SQLITE_BUSY_TIMEOUT_MS", str(cls.sqlite_busy_timeout_ms))
            ),
            graphiql=env.get("SIGNOFF_GRAPHIQL", "1") not in {"0", "false", "no"},
            secret_key=env.get("SIGNOFF_SECRET_KEY") or None,
            secret_key_file=env.get("SIGNOFF_SECRET_KEY_FILE") or cls.secret_key_file,
            arq_queue=env.get("SIGNOFF_ARQ_QUEUE") or ARQ_QUEUE_DEFAULT,
            delivery_lease_seconds=int(
                env.get("SIGNOFF_DELIVERY_LEASE_SECONDS", str(DELIVERY_LEASE_SECONDS))
            ),
            sweep_interval_seconds=int(
                env.get("SIGNOFF_SWEEP_INTERVAL_SECONDS", str(SWEEP_INTERVAL_SECONDS))
            ),
            reconcile_interval_seconds=int(
                env.get("SIGNOFF_RECONCILE_INTERVAL_SECONDS", str(RECONCILE_INTERVAL_SECONDS))
            ),
            worker_max_jobs=int(env.get("SIGNOFF_WORKER_MAX_JOBS", str(WORKER_MAX_JOBS))),
            delivery_concurrency=int(
                env.get("SIGNOFF_DELIVERY_CONCURRENCY", str(DELIVERY_CONCURRENCY))
            ),
            job_timeout_seconds=int(
                env.get("SIGNOFF_JOB_TIMEOUT_SECONDS", str(JOB_TIMEOUT_SECONDS))
            ),
            embedded_worker=env.get("SIGNOFF_EMBEDDED_WORKER", "1") not in {"0", "false", "no"},
            events_channel=env.get("SIGNOFF_EVENTS_CHANNEL") or cls.events_channel,
            subscriber_buffer=int(env.get("SIGNOFF_SUBSCRIBER_BUFFER", str(cls.subscriber_buffer))),
            events_relay_seconds=float(
                env.get("SIGNOFF_EVENTS_RELAY_SECONDS", str(cls.events_relay_seconds))
            ),
            events_retention_days=float(
                env.get("SIGNOFF_EVENTS_RETENTION_DAYS", str(cls.events_retention_days))
            ),
            events_auth_refresh_seconds=float(
                env.get("SIGNOFF_EVENTS_AUTH_REFRESH_SECONDS", str(cls.events_auth_refresh_seconds))
            ),
            auth_cache_seconds=float(
                env.get("SIGNOFF_AUTH_CACHE_SECONDS", str(cls.auth_cache_seconds))
            ),
            ws_per_message_deflate=env.get("SIGNOFF_WS_PER_MESSAGE_DEFLATE", "0")
            in {"1", "true", "yes"},
            metrics_port=int(env["SIGNOFF_METRICS_PORT"])
            if env.get("SIGNOFF_METRICS_PORT")
            else None,
            metrics_host=env.get("SIGNOFF_METRICS_HOST") or cls.metrics_host,
        )


def normalise_database_url(url: str) -> str:
    """Accept plain ``postgresql://`` and ``sqlite://`` URLs and pick the async driver."""
    for prefix, replacement in (
        ("postgres://", "postgresql+psycopg://"),
        ("postgresql://", "postgresql+psycopg://"),
        ("sqlite:///", "sqlite+aiosqlite:///"),
    ):
        if url.startswith(prefix):
            return replacement + url[len(prefix) :]
    return url


def load_sealer(settings: Settings) -> Sealer:
    """The sealer for this process's webhook signing secrets."""
    return sealing.load_sealer(settings.secret_key, Path(settings.secret_key_file))
