"""The ``OperationsSnapshot`` and ``OperationsStatistics`` types: what operators watch."""

from __future__ import annotations

from datetime import datetime

import strawberry

from signoff import models
from signoff.resolvers.incidents import operations, statistics
from signoff.schema.node import Node


@strawberry.type(
    description=(
        "One outbox at `generatedAt`. `total` is pending + inFlight + retrying + "
        "terminalFailures; each outbox's field descriptions on `OperationsSnapshot` say what "
        "its parts are."
    )
)
class OutboxStats:
    total: int
    pending: int
    in_flight: int
    retrying: int
    terminal_failures: int
    oldest_due_age_seconds: float | None = strawberry.field(
        description="How long the longest-waiting due item has been due; null when none is."
    )

    @classmethod
    def from_stats(cls, stats: operations.OutboxStats) -> OutboxStats:
        return cls(
            total=stats.total,
            pending=stats.pending,
            in_flight=stats.in_flight,
            retrying=stats.retrying,
            terminal_failures=stats.terminal_failures,
            oldest_due_age_seconds=stats.oldest_due_age_seconds,
        )


@strawberry.type
class SeverityCount:
    severity: models.Severity
    count: int


@strawberry.type
class ProposalStateCount:
    state: models.ProposalState
    count: int


@strawberry.type(description="One pass of the periodic reconciliation.")
class ReconciliationRun(Node):
    id: strawberry.ID
    state: models.ReconciliationState
    scanned_count: int
    repaired_count: int
    error_code: str | None
    started_at: datetime
    finished_at: datetime | None

    @classmethod
    def from_model(cls, run: models.ReconciliationRun) -> ReconciliationRun:
        return cls(
            id=strawberry.ID(run.id),
            state=models.ReconciliationState(run.state),
            scanned_count=run.scanned_count,
            repaired_count=run.repaired_count,
            error_code=run.error_code,
            started_at=run.started_at,
            finished_at=run.finished_at,
        )


@strawberry.type(description="Backlogs, open incidents and reconciliation, read at one instant.")
class OperationsSnapshot:
    generated_at: datetime
    proposal_delivery: OutboxStats = strawberry.field(
        description=(
            "Proposals on their way out. pending: QUEUED; inFlight: APPLYING; retrying: "
            "FAILED with a retry scheduled; terminalFailures: FAILED, delivery given up. Due: "
            "`nextAttemptAt` has come, or an APPLYING proposal's lease lapsed."
        )
    )
    change_event_relay: OutboxStats = strawberry.field(
        description=(
            "Change events not yet published to subscribers. pending: no cursor yet; "
            "inFlight: stamped within the relay's grace period; retrying: stamped and older "
            "(the relay re-sends them); terminalFailures: always 0. Due from when it occurred."
        )
    )
    human_tasks: OutboxStats = strawberry.field(
        description=(
            "Tasks waiting for a person. pending: OPEN; inFlight: CLAIMED with a live claim; "
            "retrying: CLAIMED with a lapsed claim (workable by anyone again); "
            "terminalFailures: always 0. Due: `dueAt` has passed."
        )
    )
    open_incidents: list[SeverityCount] = strawberry.field(
        description="Incidents not RESOLVED, by severity, most urgent first; zeros included."
    )
    proposals_by_state: list[ProposalStateCount]
    reconciliation_runs: list[ReconciliationRun] = strawberry.field(
        description="The newest runs first, at most 5."
    )

    @classmethod
    def from_operations(cls, ops: operations.Operations) -> OperationsSnapshot:
        outboxes = {stats.outbox: OutboxStats.from_stats(stats) for stats in ops.outboxes}
        return cls(
            generated_at=ops.generated_at,
            proposal_delivery=outboxes[operations.PROPOSAL_DELIVERY],
            change_event_relay=outboxes[operations.CHANGE_EVENT_RELAY],
            human_tasks=outboxes[operations.HUMAN_TASKS],
            open_incidents=[
                SeverityCount(severity=s, count=n) for s, n in ops.open_incidents.items()
            ],
            proposals_by_state=[
                ProposalStateCount(state=s, count=n) for s, n in ops.proposals_by_state.items()
            ],
            reconciliation_runs=[ReconciliationRun.from_model(r) for r in ops.reconciliation_runs],
        )


@strawberry.type(
    description=(
        "Seconds from proposed to decided: nearest-rank percentiles of `count` decisions; "
        "null when there were none."
    )
)
class DecisionTimes:
    count: int
    p50_seconds: float | None
    p90_seconds: float | None
    p99_seconds: float | None

    @classmethod
    def from_times(cls, times: statistics.DecisionTimes) -> DecisionTimes:
        return cls(
            count=times.count,
            p50_seconds=times.p50,
            p90_seconds=times.p90,
            p99_seconds=times.p99,
        )


@strawberry.type(description="One hour of operations, from `start`.")
class OperationsHour:
    start: datetime
    decided: int = strawberry.field(
        description="Proposals decided: approved, rejected, or decided by their deadline."
    )
    applied: int = strawberry.field(
        description="Proposals applied: delivered to their target, or executed by their agent."
    )
    open_incidents: int = strawberry.field(
        description="Incidents open at the hour's end (for the current hour: at `until`)."
    )
    time_to_decision: DecisionTimes = strawberry.field(
        description="Of the proposals decided in this hour."
    )


@strawberry.type(
    description=(
        "The last 24 hours, hour by hour, oldest first; the current hour, still running, last."
    )
)
class OperationsStatistics:
    since: datetime = strawberry.field(description="The start of the first hour.")
    until: datetime = strawberry.field(description="When it was read.")
    hours: list[OperationsHour]
    time_to_decision: DecisionTimes = strawberry.field(
        description="Of every proposal decided since `since`."
    )

    @classmethod
    def from_statistics(cls, stats: statistics.OperationsStatistics) -> OperationsStatistics:
        return cls(
            since=stats.since,
            until=stats.until,
            hours=[
                OperationsHour(
                    start=hour.start,
                    decided=hour.decided,
                    applied=hour.applied,
                    open_incidents=hour.open_incidents,
                    time_to_decision=DecisionTimes.from_times(hour.time_to_decision),
                )
                for hour in stats.hours
            ],
            time_to_decision=DecisionTimes.from_times(stats.time_to_decision),
        )
