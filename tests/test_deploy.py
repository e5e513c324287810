"""deploy/: the Grafana dashboard loads as JSON, the alert rules parse as YAML, and every
metric either names is one Signoff exports."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from signoff import metrics
from signoff.models import ProposalState, Severity
from signoff.resolvers.operations import Operations, OutboxStats

DEPLOY = Path(__file__).parent.parent / "deploy"
METRIC = re.compile(r"\bsignoff_[a-z_]+")


def exported_names() -> set[str]:
    """Every sample name an API process exports, histogram series included."""
    operations = Operations(
        generated_at=datetime.now(UTC),
        outboxes=[OutboxStats("proposal_delivery", 0, 0, 0, 0, 0, None)],
        open_incidents=dict.fromkeys(Severity, 0),
        proposals_by_state=dict.fromkeys(ProposalState, 0),
        reconciliation_runs=[],
    )
    text = metrics.exposition(operations, 0).decode()
    families = set(re.findall(r"^# TYPE (\S+) ", text, re.MULTILINE))
    return families | {
        f"{name}_{suffix}" for name in families for suffix in ("bucket", "count", "sum", "total")
    }


def test_the_dashboard_loads_and_charts_every_metric() -> None:
    dashboard: dict[str, Any] = json.loads((DEPLOY / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in METRIC.findall(expr)}
    assert used <= exported_names(), used - exported_names()
    for family in (
        "signoff_proposals",
        "signoff_open_incidents",
        "signoff_outbox_items",
        "signoff_outbox_oldest_due_age_seconds",
        "signoff_deliveries_total",
        "signoff_delivery_duration_seconds_bucket",
        "signoff_live_subscribers",
        "signoff_graphql_requests_total",
        "signoff_graphql_errors_total",
        "signoff_reconciliation_repairs_total",
    ):
        assert family in used, family
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])


def test_the_alert_rules_parse_and_name_exported_metrics() -> None:
    rules_file = yaml.safe_load((DEPLOY / "prometheus-alerts.yml").read_text())
    rules = [rule for group in rules_file["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} >= {
        "SignoffDeliveryBacklogOverdue",
        "SignoffCriticalIncidentOpen",
        "SignoffDeliveryFailureRateHigh",
    }
    for rule in rules:
        assert rule["expr"].strip() and rule["annotations"]["summary"]
        names = set(METRIC.findall(rule["expr"]))
        assert names and names <= exported_names(), (rule["alert"], names)
