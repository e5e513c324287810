"""Prometheus metrics: every name Signoff exports is defined here.

Counters (``REGISTRY``) count what this process did and start at zero with it; Prometheus
sums them across processes. Gauges (``OperationsCollector``) are read from the database at
scrape time by every API process alike, so aggregate them with ``max``, not ``sum``
(docs/operating.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.constants import DELIVERY_LATENCY_BUCKETS
from signoff.delivery import AttemptOutcome
from signoff.resolvers.incidents.operations import Operations

# This process's counters and histograms; not prometheus_client's global default registry,
# so nothing a library registers there leaks into ours, and tests read exactly these.
REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)

DELIVERIES = Counter(
    "signoff_deliveries_total",
    "Delivery attempts that got an outcome, by response class "
    "(APPLIED, ACCEPTED, RETRYABLE, TERMINAL).",
    ["outcome"],
    registry=REGISTRY,
)
DELIVERY_SECONDS = Histogram(
    "signoff_delivery_duration_seconds",
    "Seconds from a delivery attempt's start to its finish.",
    buckets=DELIVERY_LATENCY_BUCKETS,
    registry=REGISTRY,
)
GRAPHQL_REQUESTS = Counter(
    "signoff_graphql_requests_total",
    "GraphQL operations executed, by type (query, mutation, subscription; unknown when the "
    "document did not parse).",
    ["operation"],
    registry=REGISTRY,
)
GRAPHQL_ERRORS = Counter(
    "signoff_graphql_errors_total",
    "GraphQL errors returned to clients, by extensions.code.",
    ["code"],
    registry=REGISTRY,
)
RECONCILIATION_REPAIRS = Counter(
    "signoff_reconciliation_repairs_total",
    "Repairs made by the reconciliation job, by repair action type.",
    ["action_type"],
    registry=REGISTRY,
)


SQL_STATEMENTS = Counter(
    "signoff_sql_statements",
    "SQL statements this process sent to its database (the cost of its work: "
    "bench/delivery.py divides it by the deliveries made).",
    registry=REGISTRY,
)


def count_statements(engine: AsyncEngine) -> None:
    """Count every statement ``engine`` executes in ``SQL_STATEMENTS``."""

    def counted(*_: object) -> None:
        SQL_STATEMENTS.inc()

    event.listen(engine.sync_engine, "before_cursor_execute", counted)


def observe_delivery(outcome: AttemptOutcome) -> None:
    """Count one recorded delivery outcome and its latency."""
    DELIVERIES.labels(outcome=outcome.response_class.value).inc()
    seconds = (outcome.finished_at - outcome.started_at).total_seconds()
    DELIVERY_SECONDS.observe(max(0.0, seconds))


def observe_graphql(operation: str, error_codes: Iterable[str]) -> None:
    """Count one GraphQL operation and each error it returned."""
    GRAPHQL_REQUESTS.labels(operation=operation).inc()
    for code in error_codes:
        GRAPHQL_ERRORS.labels(code=code).inc()


@dataclass(frozen=True)
class LiveFigures:
    """An API process's live subscriptions, as its broadcaster counts them."""

    subscribers: int
    groups: int
    executions: int


class OperationsCollector(Collector):
    """The gauges of one scrape, from figures already read (no I/O here).

    ``operations`` is ``None`` when the database could not be read in time: the scrape
    then says so (``signoff_operations_read_ok 0``) instead of failing.
    """

    def __init__(self, operations: Operations | None, live: LiveFigures | None) -> None:
        self.operations = operations
        self.live = live

    def collect(self) -> Iterator[Metric]:
        if self.live is not None:
            yield from _live_metrics(self.live)
        yield GaugeMetricFamily(
            "signoff_operations_read_ok",
            "1 if this scrape read the database gauges, 0 if the database did not answer in time.",
            value=0 if self.operations is None else 1,
        )
        if self.operations is not None:
            yield from _database_gauges(self.operations)


def _live_metrics(live: LiveFigures) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "signoff_live_subscribers",
        "Live GraphQL subscriptions served by this API process.",
        value=live.subscribers,
    )
    yield GaugeMetricFamily(
        "signoff_live_groups",
        "Broadcast groups: subscribers who see the same frames share one.",
        value=live.groups,
    )
    yield CounterMetricFamily(
        "signoff_live_frame_executions",
        "Frames executed for live subscriptions (one per event per group, and replays).",
        value=live.executions,
    )


def _database_gauges(ops: Operations) -> Iterator[Metric]:
    proposals = GaugeMetricFamily("signoff_proposals", "Proposals, by state.", labels=["state"])
    for state, count in ops.proposals_by_state.items():
        proposals.add_metric([state.value], count)
    yield proposals
    incidents = GaugeMetricFamily(
        "signoff_open_incidents", "Incidents not RESOLVED, by severity.", labels=["severity"]
    )
    for severity, count in ops.open_incidents.items():
        incidents.add_metric([severity.value], count)
    yield incidents
    items = GaugeMetricFamily(
        "signoff_outbox_items",
        "Items in each outbox, by status (pending, in_flight, retrying, terminal_failure).",
        labels=["outbox", "status"],
    )
    oldest = GaugeMetricFamily(
        "signoff_outbox_oldest_due_age_seconds",
        "How long the longest-waiting due item of each outbox has been due (0: none is).",
        labels=["outbox"],
    )
    for box in ops.outboxes:
        for status, count in (
            ("pending", box.pending),
            ("in_flight", box.in_flight),
            ("retrying", box.retrying),
            ("terminal_failure", box.terminal_failures),
        ):
            items.add_metric([box.outbox, status], count)
        oldest.add_metric([box.outbox], box.oldest_due_age_seconds or 0.0)
    yield items
    yield oldest


def exposition(operations: Operations | None, live: LiveFigures | None) -> bytes:
    """The text exposition for an API process: its own counters, then the scrape's gauges."""
    scrape = CollectorRegistry()
    scrape.register(OperationsCollector(operations, live))
    return generate_latest(REGISTRY) + generate_latest(scrape)
