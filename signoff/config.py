"""Settings read from ``SIGNOFF_*`` environment variables.

No variable set means the embedded default: a SQLite file ``./signoff.db``, an
in-process event hub and an in-process job runner.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from signoff.constants import (
    ARQ_QUEUE_DEFAULT,
    AUDIT_CHECKPOINT_RECORDS,
    AUDIT_CHECKPOINT_SECONDS,
    DELIVERY_CONCURRENCY,
    DELIVERY_LEASE_SECONDS,
    JOB_TIMEOUT_SECONDS,
    LIVE_MAX_SOCKETS_PER_ACTOR,
    LIVE_MAX_SOCKETS_PER_TOKEN,
    LIVE_MAX_SUBSCRIPTIONS_PER_ACTOR,
    LIVE_MAX_SUBSCRIPTIONS_PER_TOKEN,
    RATE_LIMIT_BURST,
    RATE_LIMIT_PER_SECOND,
    RECONCILE_INTERVAL_SECONDS,
    SLACK_API_URL,
    SUBSCRIBER_BUFFER_BYTES,
    SWEEP_INTERVAL_SECONDS,
    WORKER_MAX_JOBS,
    WS_MAX_OPERATIONS_PER_CONNECTION,
    WS_PING_INTERVAL_SECONDS,
)
from signoff.destinations import DestinationPolicy
from signoff.evidence import audit_key, sealing
from signoff.evidence.audit_key import Signer
from signoff.evidence.sealing import Sealer
from signoff.oidc_settings import OidcSettings

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./signoff.db"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


# The live bounds, each read from SIGNOFF_<FIELD> (e.g. SIGNOFF_LIVE_MAX_SOCKETS_PER_TOKEN).
LIVE_LIMIT_FIELDS = (
    "live_max_sockets_per_token",
    "live_max_sockets_per_actor",
    "live_max_subscriptions_per_token",
    "live_max_subscriptions_per_actor",
)


@dataclass(frozen=True)
class Settings:
    database_url: str = DEFAULT_DATABASE_URL
    redis_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    log_level: str = "info"
    # `json`, `text`, or `auto`: plain text when stderr is a terminal, JSON otherwise.
    log_format: str = "auto"
    max_body_bytes: int = 1_048_576
    # SQLite: how long a write waits for the write lock before DATABASE_BUSY.
    sqlite_busy_timeout_ms: int = 30_000
    graphiql: bool = True
    # Off (SIGNOFF_INTROSPECTION=0): __schema and __type are refused (INTROSPECTION_DISABLED).
    introspection: bool = True
    # Requests per second per bearer token, per API process, after a burst (0: no limit).
    rate_limit_per_second: float = RATE_LIMIT_PER_SECOND
    rate_limit_burst: int = RATE_LIMIT_BURST
    # Websockets: operations running at once on one connection; server pings (0: none).
    ws_max_operations: int = WS_MAX_OPERATIONS_PER_CONNECTION
    ws_ping_seconds: float = WS_PING_INTERVAL_SECONDS
    console: bool = True
    # Origins (scheme://host[:port]) whose pages may call the API from a browser; none: only
    # pages served by Signoff itself.
    cors_origins: tuple[str, ...] = ()
    # Persisted queries (signoff.schema.serving.persisted): a JSON file of sha256 -> document always
    # known, and whether nothing else may run.
    persisted_queries_file: str | None = None
    persisted_queries_only: bool = False
    # Seals webhook signing secrets at rest (signoff.evidence.sealing); every process sharing a
    # database needs the same key. Unset: a key file, created on first use.
    secret_key: str | None = None
    secret_key_file: str = "signoff.key"
    # Off: audit records are kept but get no place in the verifiable log (no proofs, no
    # checkpoints) until a process with it on stamps them; for measuring what it costs.
    audit_log: bool = True
    # Signs the audit log's checkpoints (signoff.evidence.audit_key); every process sharing
    # a database needs the same key. Unset: a key file beside the database, created on first use.
    audit_signing_key: str | None = None
    audit_signing_key_file: str | None = None
    # A checkpoint is signed once this many records or seconds have passed since the last.
    audit_checkpoint_records: int = AUDIT_CHECKPOINT_RECORDS
    audit_checkpoint_seconds: float = AUDIT_CHECKPOINT_SECONDS
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
    # ... and the bytes those frames may weigh (a few large frames are as heavy as many).
    subscriber_buffer_bytes: int = SUBSCRIBER_BUFFER_BYTES
    # Live sockets and subscriptions one token, and one actor, may hold per API process
    # (0: no bound); past them a connection_init closes 4429 and a subscription is refused
    # TOO_MANY_SUBSCRIPTIONS.
    live_max_sockets_per_token: int = LIVE_MAX_SOCKETS_PER_TOKEN
    live_max_sockets_per_actor: int = LIVE_MAX_SOCKETS_PER_ACTOR
    live_max_subscriptions_per_token: int = LIVE_MAX_SUBSCRIPTIONS_PER_TOKEN
    live_max_subscriptions_per_actor: int = LIVE_MAX_SUBSCRIPTIONS_PER_ACTOR
    events_relay_seconds: float = 1.0
    events_retention_days: float = 7.0
    events_auth_refresh_seconds: float = 30.0
    # A token's viewer is kept this long between reads on API requests (0: every request).
    auth_cache_seconds: float = 2.0
    # Compression state is kept per connection (tens of KiB each): off unless asked for.
    ws_per_message_deflate: bool = False
    # A graphql-transport-ws subscription, once authorised, is served without Strawberry's
    # per-operation machinery (off, SIGNOFF_LIVE_DETACHED=0: inside it for its whole life,
    # the reference the lean path is tested against).
    live_detached: bool = True
    # `signoff worker`: serve Prometheus metrics on this port (unset: no metrics server).
    # API processes always serve them at /metrics on their own port.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # Where reviewers reach this service (scheme://host[:port][/prefix]): approval links
    # sent in notifications start with it. Unset: http://<host>:<port>, right only when
    # reviewers reach the API process directly (the embedded default).
    public_url: str | None = None
    # Sign-in with an OpenID provider (``SIGNOFF_OIDC_ISSUER`` and the rest; unset: none).
    oidc: OidcSettings | None = None
    # Whether the console offers pasting an API token: by default, only without OIDC.
    console_token_sign_in: bool = True
    # Reviewers in Slack and by mail (docs/slack.md): the Slack app's bot token (sealed into
    # each SLACK_APP channel as it is added) and signing secret, and its Web API.
    slack_bot_token: str | None = None
    slack_signing_secret: str | None = None
    slack_api_url: str = SLACK_API_URL
    # Socket Mode (no public URL): the app-level token (xapp-…) and whether to connect.
    slack_app_token: str | None = None
    slack_socket_mode: bool = False
    # EMAIL channels: the SMTP server and the sender.
    smtp: SmtpSettings | None = None
    # Proxies whose X-Forwarded-For / X-Forwarded-Proto are believed (addresses or CIDRs);
    # none: the peer's address is the client's, whatever a request claims.
    trusted_proxies: tuple[Network, ...] = ()
    # Private and loopback networks deliveries and notifications may reach (CIDRs); none:
    # only public addresses (docs/design.md section 10, "Where deliveries may go").
    delivery_allow_networks: tuple[Network, ...] = ()

    @property
    def destinations(self) -> DestinationPolicy:
        """Where this process's deliveries and notifications may go."""
        return DestinationPolicy(self.delivery_allow_networks)

    @property
    def public_base_url(self) -> str:
        """The start of every URL Signoff sends out (approval links in notifications)."""
        return self.public_url or f"http://{self.host}:{self.port}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from the environment, normalising database URLs to async drivers."""
        env = os.environ if environ is None else environ
        oidc = OidcSettings.from_env(env)
        return cls(
            database_url=normalise_database_url(
                env.get("SIGNOFF_DATABASE_URL") or DEFAULT_DATABASE_URL
            ),
            redis_url=env.get("SIGNOFF_REDIS_URL") or None,
            host=env.get("SIGNOFF_HOST", cls.host),
            port=int(env.get("SIGNOFF_PORT", str(cls.port))),
            log_level=env.get("SIGNOFF_LOG_LEVEL", cls.log_level).lower(),
            log_format=env.get("SIGNOFF_LOG_FORMAT", cls.log_format).lower(),
            max_body_bytes=int(env.get("SIGNOFF_MAX_BODY_BYTES", str(cls.max_body_bytes))),
            sqlite_busy_timeout_ms=int(
                env.get("SIGNOFF_SQLITE_BUSY_TIMEOUT_MS", str(cls.sqlite_busy_timeout_ms))
            ),
            graphiql=env.get("SIGNOFF_GRAPHIQL", "1") not in {"0", "false", "no"},
            introspection=env.get("SIGNOFF_INTROSPECTION", "1") not in {"0", "false", "no"},
            rate_limit_per_second=float(env.get("SIGNOFF_RATE_LIMIT", str(RATE_LIMIT_PER_SECOND))),
            rate_limit_burst=int(env.get("SIGNOFF_RATE_LIMIT_BURST", str(RATE_LIMIT_BURST))),
            ws_max_operations=int(
                env.get("SIGNOFF_WS_MAX_OPERATIONS", str(WS_MAX_OPERATIONS_PER_CONNECTION))
            ),
            ws_ping_seconds=float(
                env.get("SIGNOFF_WS_PING_SECONDS", str(WS_PING_INTERVAL_SECONDS))
            ),
            console=env.get("SIGNOFF_CONSOLE", "1") not in {"0", "false", "no"},
            cors_origins=parse_origins(env.get("SIGNOFF_CORS_ORIGINS", "")),
            persisted_queries_file=env.get("SIGNOFF_PERSISTED_QUERIES_FILE") or None,
            persisted_queries_only=env.get("SIGNOFF_PERSISTED_QUERIES_ONLY", "0")
            in {"1", "true", "yes"},
            secret_key=env.get("SIGNOFF_SECRET_KEY") or None,
            secret_key_file=env.get("SIGNOFF_SECRET_KEY_FILE") or cls.secret_key_file,
            audit_log=env.get("SIGNOFF_AUDIT_LOG", "1") not in {"0", "false", "no"},
            audit_signing_key=env.get("SIGNOFF_AUDIT_SIGNING_KEY") or None,
            audit_signing_key_file=env.get("SIGNOFF_AUDIT_SIGNING_KEY_FILE") or None,
            audit_checkpoint_records=int(
                env.get("SIGNOFF_AUDIT_CHECKPOINT_RECORDS", str(AUDIT_CHECKPOINT_RECORDS))
            ),
            audit_checkpoint_seconds=float(
                env.get("SIGNOFF_AUDIT_CHECKPOINT_SECONDS", str(AUDIT_CHECKPOINT_SECONDS))
            ),
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
            subscriber_buffer_bytes=int(
                env.get("SIGNOFF_SUBSCRIBER_BUFFER_BYTES", str(cls.subscriber_buffer_bytes))
            ),
            **{
                field: int(env.get("SIGNOFF_" + field.upper(), str(getattr(cls, field))))
                for field in LIVE_LIMIT_FIELDS
            },
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
            live_detached=env.get("SIGNOFF_LIVE_DETACHED", "1") not in {"0", "false", "no"},
            metrics_port=int(env["SIGNOFF_METRICS_PORT"])
            if env.get("SIGNOFF_METRICS_PORT")
            else None,
            metrics_host=env.get("SIGNOFF_METRICS_HOST") or cls.metrics_host,
            public_url=parse_public_url(env.get("SIGNOFF_PUBLIC_URL", "")),
            oidc=oidc,
            console_token_sign_in=env.get(
                "SIGNOFF_CONSOLE_TOKEN_SIGN_IN", "0" if oidc is not None else "1"
            )
            not in {"0", "false", "no"},
            slack_bot_token=env.get("SIGNOFF_SLACK_BOT_TOKEN") or None,
            slack_signing_secret=env.get("SIGNOFF_SLACK_SIGNING_SECRET") or None,
            slack_api_url=parse_slack_api_url(env.get("SIGNOFF_SLACK_API_URL", "")),
            slack_app_token=parse_slack_app_token(env),
            slack_socket_mode=env.get("SIGNOFF_SLACK_SOCKET_MODE", "0") in {"1", "true", "yes"},
            smtp=SmtpSettings.from_env(env),
            trusted_proxies=parse_networks(
                "SIGNOFF_TRUSTED_PROXIES", env.get("SIGNOFF_TRUSTED_PROXIES", "")
            ),
            delivery_allow_networks=parse_networks(
                "SIGNOFF_DELIVERY_ALLOW_NETWORKS", env.get("SIGNOFF_DELIVERY_ALLOW_NETWORKS", "")
            ),
        )


def parse_networks(name: str, value: str) -> tuple[Network, ...]:
    """A list of addresses or CIDRs separated by commas or spaces (an address is its own
    /32 or /128); a mistake is refused at start, naming the variable."""
    networks = []
    for item in value.replace(",", " ").split():
        try:
            networks.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            message = f"{name}: {item!r} is not an address or a CIDR like 10.0.0.0/8"
            raise ValueError(message) from None
    return tuple(networks)


@dataclass(frozen=True)
class SmtpSettings:
    """Where EMAIL channels' mail goes (``SIGNOFF_SMTP_*``); unset host: no mail."""

    host: str
    port: int = 587
    # Upgrade the connection with STARTTLS before authenticating (off: plain, for loopback).
    starttls: bool = True
    username: str | None = None
    password: str | None = None
    sender: str = "signoff@localhost"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SmtpSettings | None:
        host = env.get("SIGNOFF_SMTP_HOST")
        if not host:
            return None
        return cls(
            host=host,
            port=int(env.get("SIGNOFF_SMTP_PORT", str(cls.port))),
            starttls=env.get("SIGNOFF_SMTP_STARTTLS", "1") not in {"0", "false", "no"},
            username=env.get("SIGNOFF_SMTP_USERNAME") or None,
            password=env.get("SIGNOFF_SMTP_PASSWORD") or None,
            sender=env.get("SIGNOFF_SMTP_FROM") or cls.sender,
        )


def parse_slack_api_url(value: str) -> str:
    """``SIGNOFF_SLACK_API_URL``: Slack's Web API by default; kept with a trailing slash, as
    ``slack_sdk`` appends method names to it."""
    url = value.strip() or SLACK_API_URL
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"SIGNOFF_SLACK_API_URL: {value!r} is not a URL like https://host/api/")
    return url if url.endswith("/") else url + "/"


def parse_slack_app_token(env: Mapping[str, str]) -> str | None:
    """``SIGNOFF_SLACK_APP_TOKEN``: an app-level token (``xapp-…``), required by Socket Mode
    (``SIGNOFF_SLACK_SOCKET_MODE=1``) together with the bot token; a mistake is refused at
    start (the token itself is never repeated)."""
    token = env.get("SIGNOFF_SLACK_APP_TOKEN") or None
    if token is not None and not token.startswith("xapp-"):
        raise ValueError(
            "SIGNOFF_SLACK_APP_TOKEN: not an app-level token (those start with xapp-; "
            "make one under Basic Information, App-Level Tokens, scope connections:write)"
        )
    if env.get("SIGNOFF_SLACK_SOCKET_MODE", "0") in {"1", "true", "yes"} and (
        token is None or not env.get("SIGNOFF_SLACK_BOT_TOKEN")
    ):
        raise ValueError(
            "SIGNOFF_SLACK_SOCKET_MODE=1 needs SIGNOFF_SLACK_APP_TOKEN (xapp-…) and "
            "SIGNOFF_SLACK_BOT_TOKEN"
        )
    return token


def parse_origins(value: str) -> tuple[str, ...]:
    """``SIGNOFF_CORS_ORIGINS``: origins separated by commas or spaces, each exactly
    ``scheme://host[:port]`` as a browser sends it (a trailing slash is dropped)."""
    origins = []
    for item in value.replace(",", " ").split():
        origin = item.rstrip("/")
        scheme, _, host = origin.partition("://")
        if scheme not in {"http", "https"} or not host or "/" in host:
            raise ValueError(f"SIGNOFF_CORS_ORIGINS: {item!r} is not an origin like https://host")
        origins.append(origin)
    return tuple(origins)


def parse_public_url(value: str) -> str | None:
    """``SIGNOFF_PUBLIC_URL``: an http(s) URL with a host, kept without a trailing slash."""
    url = value.strip().rstrip("/")
    if not url:
        return None
    scheme, _, rest = url.partition("://")
    if scheme not in {"http", "https"} or not rest or rest.startswith("/") or "?" in rest:
        raise ValueError(f"SIGNOFF_PUBLIC_URL: {value!r} is not a URL like https://host")
    return url


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


def load_audit_signer(settings: Settings) -> Signer:
    """The signer of this process's audit checkpoints."""
    key_file = settings.audit_signing_key_file
    path = Path(key_file) if key_file else audit_key.default_key_file(settings.database_url)
    return audit_key.load_signer(settings.audit_signing_key, path)


def load_sealer(settings: Settings) -> Sealer:
    """The sealer for this process's webhook signing secrets."""
    return sealing.load_sealer(settings.secret_key, Path(settings.secret_key_file))
