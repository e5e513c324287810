"""Limits and defaults in one place."""

from __future__ import annotations

PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 100

JSON_VALUE_MAX_BYTES = 64 * 1024
# JSON numbers: what every JSON reader keeps exactly (IEEE doubles) is within ±2^53; a
# target's input schema may opt in to larger ones (JSON_LARGE_NUMBERS_KEYWORD: true).
JSON_SAFE_INTEGER = 2**53
JSON_LARGE_NUMBERS_KEYWORD = "x-signoff-large-numbers"
# A request body: digits in one JSON number (Python refuses to parse over 4,300), and
# nesting of arrays and objects.
JSON_NUMBER_MAX_DIGITS = 100
JSON_MAX_DEPTH = 64

PROPOSAL_EXPIRY_DEFAULT_SECONDS = 24 * 3600
PROPOSAL_EXPIRY_MIN_SECONDS = 60
PROPOSAL_EXPIRY_MAX_SECONDS = 31 * 24 * 3600

# Deadline policies (docs/design.md section 4.20): at most this many escalation steps,
# each giving the next queue between the proposal expiry bounds above.
ESCALATION_CHAIN_MAX = 3
# Reminders (docs/design.md section 5.4): at most this many per queue, each a percentage
# (1-99) of a task's time to its due time; queue statistics look back this far.
QUEUE_REMINDERS_MAX = 5
# Notifications (docs/design.md section 5.6): attempts before a notification gives up (and
# opens an incident), each attempt's lease and timeout, and how many are sent per run.
NOTIFICATION_MAX_ATTEMPTS = 5
NOTIFICATION_LEASE_SECONDS = 60
NOTIFICATION_TIMEOUT_SECONDS = 10
NOTIFICATION_BATCH_SIZE = 50
# The in-process sender, after a failed run, tries again this soon.
NOTIFICATION_RETRY_WAKE_SECONDS = 1.0
NOTIFICATION_INCIDENT_FINGERPRINT = "notification:{notification_id}"
# Reviewers in Slack (docs/slack.md): Slack's Web API, and how old a signed request may be.
SLACK_API_URL = "https://slack.com/api/"
SLACK_REQUEST_MAX_AGE_SECONDS = 300
# Socket Mode: how often the connection is pinged (a socket silent four times this long is
# replaced), and how long envelopes being answered get to finish when the process stops.
SLACK_SOCKET_PING_SECONDS = 5.0
SLACK_SOCKET_STOP_GRACE_SECONDS = 5.0
# An EMAIL channel without approvalLinkTtlSeconds sends links valid this long.
EMAIL_LINK_TTL_SECONDS = 24 * 3600
# The last_error_code of a notification cancelled, unsent, as its channel was switched off.
CHANNEL_DISABLED_CODE = "CHANNEL_DISABLED"
CHANNEL_REMOVED_CODE = "CHANNEL_REMOVED"
# Approval links (docs/design.md section 5.7): lifetime bounds, and how many link requests
# one client may make per window.
APPROVAL_LINK_TTL_DEFAULT_SECONDS = 24 * 3600
APPROVAL_LINK_TTL_MAX_SECONDS = 72 * 3600
APPROVAL_LINK_TTL_MIN_SECONDS = 60
APPROVAL_LINK_RATE_LIMIT = 30
APPROVAL_LINK_RATE_WINDOW_SECONDS = 60
APPROVAL_LINK_MAX_CLIENTS_TRACKED = 10_000
# Delegation (docs/design.md section 5.5): the longest period a reviewer may be away for.
DELEGATION_MAX_SECONDS = 90 * 24 * 3600
QUEUE_STATS_WINDOW_SECONDS = 24 * 3600

QUEUE_CLAIM_TTL_DEFAULT_SECONDS = 15 * 60
QUEUE_DUE_DEFAULT_SECONDS = 24 * 3600

TARGET_MAX_ATTEMPTS_DEFAULT = 8
TARGET_TIMEOUT_DEFAULT_SECONDS = 10
# Per-target limits (docs/design.md section 4.15).
TARGET_MAX_CONCURRENCY_DEFAULT = 20
TARGET_MAX_CONCURRENCY_MAX = 1000
TARGET_RATE_MIN_PER_SECOND = 0.01
TARGET_RATE_MAX_PER_SECOND = 10_000.0
# The circuit breaker (docs/design.md section 4.16): it opens after this many consecutive
# failed attempts, and probes with one delivery after the probe interval, doubling up to
# the maximum while probes keep failing.
CIRCUIT_FAILURE_THRESHOLD = 10
CIRCUIT_PROBE_SECONDS = 30
CIRCUIT_PROBE_MAX_SECONDS = 15 * 60
REQUIRED_APPROVALS_MAX = 5
# Bulk decisions (docs/design.md section 4.18): items per call, and the call's key, whose
# items are keyed ``<key>#<index>`` within the idempotency key limit of 200.
BULK_DECISION_MAX_ITEMS = 100
BULK_DECISION_KEY_MAX_CHARS = 150
# Approval policies (section 4.19): rules per target's policy.
POLICY_MAX_RULES = 50

REASON_MIN_CHARS = 3
REASON_MAX_CHARS = 2000

DIGEST_SCHEMA_VERSION = "1"

QUERY_MAX_DEPTH = 12
QUERY_MAX_ALIASES = 30
QUERY_MAX_TOKENS = 2000
# The cost of a query: one per field, times the page size (``first``, or the default) of
# every connection above it, times QUERY_LIST_SIZE_ESTIMATE for every plain list above it.
QUERY_MAX_COST = 50_000
# Selections of one response name, or fragments, merged into one place: graphql-core
# compares them pairwise while validating (490 copies of one field blocked it for 1.5 s).
QUERY_MAX_MERGED = 10
QUERY_LIST_SIZE_ESTIMATE = 10
# Websockets: operations one connection may run at once; a server ping this often.
WS_MAX_OPERATIONS_PER_CONNECTION = 100
WS_PING_INTERVAL_SECONDS = 15.0
# Requests per second per token (a bucket of RATE_LIMIT_BURST), per API process.
RATE_LIMIT_PER_SECOND = 100.0
RATE_LIMIT_BURST = 1000
RATE_LIMIT_MAX_TOKENS_TRACKED = 10_000

TOKEN_PREFIX = "so_"
# Sign-in with an OpenID provider (signoff.resolvers.access.provider and sessions).
CONSOLE_SESSION_PREFIX = "sos_"
CONSOLE_SESSION_COOKIE = "signoff_session"
CONSOLE_SIGN_IN_COOKIE = "signoff_sign_in"
# Clock skew allowed on a token's exp and nbf.
OIDC_LEEWAY_SECONDS = 30
# A key id the provider's key set lacks reads the set again, at most this often.
OIDC_JWKS_REFETCH_SECONDS = 5.0
# The discovery document and key set are read again after this long anyway.
OIDC_METADATA_MAX_AGE_SECONDS = 3600.0
OIDC_HTTP_TIMEOUT_SECONDS = 10.0
# How long a started sign-in (its state and PKCE verifier) waits for the provider.
OIDC_SIGN_IN_SECONDS = 600
# Signature algorithms an ID or access token may use: never none, never a shared secret.
OIDC_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA")
SIGNING_SECRET_PREFIX = "whsec_"
# Signing keys a process keeps decoded (signoff.webhooks), the least recently used dropped.
SIGNING_KEYS_CACHED = 256

# Delivery (docs/design.md section 4.6 onwards)
DELIVERY_LEASE_SECONDS = 60
# An agent's execution right (docs/design.md section 4.21): how long it holds it without a
# report, unless it asks for another length within these bounds.
EXECUTION_LEASE_DEFAULT_SECONDS = 300
EXECUTION_LEASE_MIN_SECONDS = 5
EXECUTION_LEASE_MAX_SECONDS = 86_400
DELIVERY_BACKOFF_BASE_SECONDS = 15
DELIVERY_BACKOFF_MAX_SECONDS = 6 * 3600
# After a 202 the proposal waits this long for reportActionResult, then is delivered again.
DELIVERY_ACCEPTED_WAIT_SECONDS = 3600
RESPONSE_BODY_MAX_BYTES = 64 * 1024
WEBHOOK_TOLERANCE_SECONDS = 5 * 60
# The webhook-id of every attempt at one proposal. Not the operation key: that is unique
# only per proposing agent, and receivers deduplicate on webhook-id.
WEBHOOK_ID = "msg_{proposal_id}"
DELIVERY_SCHEMA_VERSION = "1"
SWEEP_BATCH_SIZE = 500
SWEEP_INTERVAL_SECONDS = 10
# The audit log (docs/design.md section 15): a checkpoint is signed once this many
# records, or this many seconds, have passed since the last one.
AUDIT_CHECKPOINT_RECORDS = 1000
AUDIT_CHECKPOINT_SECONDS = 60
# Where every API process serves the public key that verifies the checkpoints.
AUDIT_KEY_PATH = "/.well-known/signoff-audit-key"
# Reconciliation (docs/design.md section 6.6): how often, and the key of each repair.
RECONCILE_INTERVAL_SECONDS = 60
RELEASE_LEASE_KEY = "release_lease:{proposal_id}:{lease}"
LAPSE_CLAIM_KEY = "lapse_claim:{task_id}:{version}"
EXPIRE_PROPOSAL_KEY = "expire_proposal:{proposal_id}"
# A proposal escalates at most once per level, and is rejected at its deadline once.
ESCALATE_PROPOSAL_KEY = "escalate_proposal:{proposal_id}:{level}"
REJECT_PROPOSAL_KEY = "reject_proposal:{proposal_id}"
# Delivery throughput (docs/delivery-throughput.md has the measurements behind each).
# A worker's deliveries in flight, and as many pooled HTTP connections.
DELIVERY_CONCURRENCY = 128
HTTP_CONNECTIONS = DELIVERY_CONCURRENCY
# Outcomes are written in one transaction per flush: when this many wait, or this long
# after the first of them finished.
OUTCOME_FLUSH_SIZE = 100
OUTCOME_FLUSH_SECONDS = 0.05
# A worker claims at most this often (wakes in between wait and share the next claim).
CLAIM_INTERVAL_SECONDS = 0.05
# An idle worker looks for due deliveries this often (a read), besides being woken by jobs.
DISPATCH_POLL_SECONDS = 1.0
# arq jobs only wake a worker's dispatcher, so they are short: more slots run no more
# of them, and the poll delay, not max_jobs, sets the wait.
WORKER_MAX_JOBS = 20
WORKER_POLL_DELAY_SECONDS = 0.05
# On shutdown, jobs in flight get this long to finish before they are cancelled (a cancelled
# delivery is safe: its lease lapses and the sweep delivers it again).
WORKER_STOP_GRACE_SECONDS = 10
# Longer than the longest target timeout (120 s) plus recording the outcome.
JOB_TIMEOUT_SECONDS = 180

# Job names and ids; the arq queue name is a setting (SIGNOFF_ARQ_QUEUE).
ARQ_QUEUE_DEFAULT = "signoff:jobs"
DELIVER_JOB = "deliver_proposal"
DELIVER_JOB_ID = "deliver:{proposal_id}:{attempt}"
# One job per attempt of a notification: sent at once when written, and again at its retry.
NOTIFY_JOB = "send_notification"
NOTIFY_JOB_ID = "notify:{notification_id}:{attempt}"
# Deliveries due now share one wake job per queue and time bucket: under a steady stream of
# approvals a worker runs a job per bucket rather than per approval, and an API process
# enqueues at most one per bucket (the dispatcher claims again a bucket after each wake).
WAKE_JOB_ID = "{queue}:wake:{bucket}"
WAKE_BUCKET_SECONDS = CLAIM_INTERVAL_SECONDS
DELIVERY_INCIDENT_FINGERPRINT = "deliver_proposal:{proposal_id}"
EXECUTION_INCIDENT_FINGERPRINT = "execute_proposal:{proposal_id}"
# Target health (docs/design.md section 6.4): a target is unhealthy when, of its last
# TARGET_HEALTH_SAMPLE attempts that started within TARGET_HEALTH_WINDOW_SECONDS, at least
# TARGET_HEALTH_MIN_ATTEMPTS were made and at least TARGET_HEALTH_FAILURE_PERCENT of them
# failed (RETRYABLE or TERMINAL). One incident per target; a recurrence is a new bout of
# failures: after the incident was resolved, or after a whole window without a judgement.
TARGET_HEALTH_WINDOW_SECONDS = 15 * 60
TARGET_HEALTH_SAMPLE = 20
TARGET_HEALTH_MIN_ATTEMPTS = 5
TARGET_HEALTH_FAILURE_PERCENT = 50
TARGET_INCIDENT_FINGERPRINT = "target:{target_id}"
TARGET_INCIDENT_KIND = "target_unhealthy"
# `signoff serve`: how long the event loop may hold the GIL before a database thread gets it.
GIL_SWITCH_INTERVAL_SECONDS = 0.0005
# `signoff serve`: the garbage collector's generation thresholds (Python's are 700, 10, 10).
GC_THRESHOLDS = (50_000, 20, 100)
# Faults: what a client is told to wait when the database is unreachable (a restart of
# PostgreSQL takes a few seconds), and how often a worker tries Redis again while it is gone.
SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2
WORKER_RECONNECT_SECONDS = 1.0
# Live events
WS_CONNECTION_INIT_TIMEOUT_SECONDS = 5
# Messages of websockets not yet acknowledged (their accepts and connection_inits) that go
# on in one turn of the event loop (``live.turnstile``): a storm of sockets takes turns
# with everything else the loop serves.
WS_ADMISSIONS_PER_LOOP_TURN = 2
# While some wait, a turn whose loop iteration took longer than this is put off by
# ``WS_ADMISSIONS_REST`` times as long: a storm takes at most about a fifth of a busy loop.
# The price is a reconnect storm let in more slowly (consoles resuming after a restart
# catch up later), which the loop's other subscribers are worth.
WS_ADMISSIONS_BUSY_TURN_SECONDS = 0.001
WS_ADMISSIONS_REST = 4.0
# How many bytes of live frames may wait for one subscriber (websocket or event stream)
# that does not read, beside SIGNOFF_SUBSCRIBER_BUFFER's count of frames; past either it is
# cut off (4429). SIGNOFF_SUBSCRIBER_BUFFER_BYTES sets it.
SUBSCRIBER_BUFFER_BYTES = 1024 * 1024
WS_CLOSE_TOO_SLOW = 4429
WS_CLOSE_TOO_SLOW_REASON = "subscriber too slow; resume with after"
# A connection_init over the sockets one token or actor may hold (SIGNOFF_LIVE_MAX_SOCKETS_*):
# the same code as the protocol's "too many" close, the refusal's code in the reason.
WS_CLOSE_TOO_MANY_CONNECTIONS = 4429
WS_CLOSE_TOO_MANY_CONNECTIONS_REASON = "TOO_MANY_CONNECTIONS: this token holds its limit of sockets"
# What one token and one actor may hold in one API process (0: no bound).
LIVE_MAX_SOCKETS_PER_TOKEN = 64
LIVE_MAX_SOCKETS_PER_ACTOR = 128
LIVE_MAX_SUBSCRIPTIONS_PER_TOKEN = 256
LIVE_MAX_SUBSCRIPTIONS_PER_ACTOR = 512
# A socket whose subscription was refused over its token's or actor's bound reads its next
# message no sooner than this: a client that floods subscriptions it may not hold slows
# its own sockets, not the process's event loop.
LIVE_REFUSAL_PAUSE_SECONDS = 0.25
# Memory given back after a storm of live connections (``live.reclaim``): once as many
# sockets and event streams that held a slot ended as are still open, and at least one
# token's bound of them, a full collection and ``malloc_trim`` run after the burst's delay,
# at most once per interval (a full collection pauses the event loop in proportion to
# what the process holds).
LIVE_RECLAIM_MIN_ENDED = 64
LIVE_RECLAIM_DELAY_SECONDS = 1.0
LIVE_RECLAIM_INTERVAL_SECONDS = 5.0
# graphql-transport-ws: the client did not answer the server's last ping before the next.
WS_CLOSE_NO_PONG = 4410
WS_CLOSE_NO_PONG_REASON = "no pong to the last ping; reconnect"
# RFC 6455 "Try Again Later": the server could not check the token (database saturated).
# The token a socket authenticated with is gone (unknown, or revoked while it was open).
WS_CLOSE_FORBIDDEN = 4403
WS_CLOSE_FORBIDDEN_REASON = "Forbidden"
WS_CLOSE_TRY_AGAIN = 1013
WS_CLOSE_TRY_AGAIN_REASON = "server busy; reconnect shortly"
# RFC 6455 "Going Away": the server is shutting down (uvicorn alone would say 1012).
WS_CLOSE_GOING_AWAY = 1001
WS_CLOSE_GOING_AWAY_REASON = "server shutting down; reconnect"
# `signoff serve` on SIGTERM: requests in flight get this long to finish (websockets are
# closed first); the whole shutdown stays within about 5 s.
SHUTDOWN_GRACE_SECONDS = 3
# The major version of change events between processes (rules in signoff/events/wire.py).
EVENTS_WIRE_VERSION = 1
# A record a change carries to other processes beyond this many bytes of JSON is read
# from the database by each of them instead (``events.wire``): a message goes to every
# process, and a proposal's payload may be large.
EVENTS_WIRE_RECORD_BYTES = 16 * 1024
FEED_PAGE_SIZE = 500
FEED_RELAY_GRACE_SECONDS = 2.0
FEED_RETENTION_CHECK_SECONDS = 3600.0
# On shutdown the event loop finishes its round; one still running after this is cancelled.
FEED_STOP_GRACE_SECONDS = 5.0
# How long events stamped by writers wait for an earlier cursor whose writer has
# committed but not yet handed its events over, before going out anyway.
FEED_REORDER_SECONDS = 0.1
FEED_LOADER_CACHE_SIZE = 2048
# Live subscriptions: distinct documents whose stripped form (without ``after``) and
# whether they read the viewer are remembered; older ones are worked out again.
LIVE_SELECTION_CACHE_SIZE = 256
# Values a group's frame completed for a record its write's other events carry too
# (``schema.serving.shared_values``), for the whole process: the newest are kept, and a
# write's events are rendered one after the other.
LIVE_SHARED_VALUES = 64
# Frames a broadcast group keeps of its newest events, so that subscribers resuming
# within them catch up without a read or an execution of their own.
LIVE_FRAME_LOG_SIZE = 512
# What every group's log may hold together, in bytes of frames.
LIVE_FRAME_LOG_BYTES = 32 * 1024 * 1024
# A resume is checked against the feed's bounds read at most this long ago (every
# resume of a reconnect storm shares one read); the replay re-checks pruning itself.
FEED_BOUNDS_SECONDS = 1.0
# Objects a writer read for its events (PostgreSQL), kept for the sequencer of this
# process: dropped after this many relay periods (another process stamped the events)
# or past this many events, the oldest first.
FEED_WRITTEN_KEEP_RELAY_PERIODS = 3
FEED_WRITTEN_LIMIT = 10_000

# Operations (the operationsSnapshot query and /metrics)
RECONCILIATION_RUNS_SHOWN = 5
# The operationsStatistics query: this many hours, the current (partial) one last.
OPERATIONS_STATISTICS_HOURS = 24
# A scrape of /metrics reads the database for at most this long, then answers 503.
METRICS_READ_TIMEOUT_SECONDS = 5.0
# Seconds; the attempt's start to finish (a target's timeout is at most 120 s).
DELIVERY_LATENCY_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
)

# Drafts (docs/design.md section 7).
DRAFT_TTL_SECONDS = 7 * 86_400  # a draft expires a week after it was prepared
DRAFTS_PER_SESSION = 200  # drafts one account may prepare in one session per week
DRAFT_VALUES_MAX_BYTES = 64 * 1024  # values plus the list of fields the person edited
DRAFT_FILES_MAX_BYTES = 2 * 1024 * 1024  # an APPROVAL owner with "carriesFiles": true
# Draft reads and retention.
# The newest drafts one ``drafts(sessionId)`` returns, values included.
DRAFT_LIST_LIMIT = 50
# One full ``drafts`` answer, values included, in UTF-8 bytes; past it the list is refused
# with TOO_LARGE: list with ``draftReferences`` and read drafts one at a time.
DRAFT_LIST_MAX_BYTES = 8 * 1024 * 1024
# The newest drafts one ``draftReferences(sessionId)`` returns (no values).
DRAFT_REFERENCE_LIST_LIMIT = 1000
# How long an expired draft stays readable with its values before retention handles it.
DRAFT_RETAIN_SECONDS = 30 * 24 * 3600
# Idempotency records of draft requests (operations named ``draft…``) older than this are
# deleted: a request retried later than a draft's lifetime meets an expired draft anyway.
DRAFT_REQUEST_REPLAY_SECONDS = 7 * 24 * 3600
DRAFT_REQUEST_OPERATION_PREFIX = "draft"
# Rows retention handles per run, per kind of work (drafts; idempotency records).
DRAFT_RETENTION_BATCH = 500
DRAFT_RETENTION_INTERVAL_SECONDS = 3600

# How long a browser may cache a CORS preflight answer (SIGNOFF_CORS_ORIGINS).
CORS_MAX_AGE_SECONDS = 600

# Automatic persisted queries: how many learned documents each API process keeps.
PERSISTED_QUERY_CACHE_SIZE = 1000
