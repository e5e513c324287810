"""deploy/: the Grafana dashboard loads as JSON, the alert rules parse as YAML, and every
metric either names is one Signoff exports. The Dockerfile and compose.yaml run real
``signoff`` commands with settings Signoff reads (checked here by parsing them: this
machine builds no images)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from starlette.applications import Starlette
from starlette.routing import Route

from signoff import cli, metrics
from signoff.config import Settings
from signoff.models import ProposalState, Severity
from signoff.resolvers.incidents.operations import Operations, OutboxStats

ROOT = Path(__file__).parent.parent
DEPLOY = ROOT / "deploy"
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
    text = metrics.exposition(operations, metrics.LiveFigures(0, 0, 0)).decode()
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


class ReadKeys(dict[str, str]):
    """An environment that records every variable read from it."""

    def __init__(self, values: dict[str, str] | None = None) -> None:
        super().__init__(values or {})
        self.read: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)


def settings_read() -> set[str]:
    """The names of every variable ``Settings.from_env`` reads."""
    environ = ReadKeys()
    Settings.from_env(environ)
    return environ.read


def interpolated(value: str) -> str:
    """Compose's ``${NAME:-default}`` as its default, ``${NAME:?message}`` as a value."""
    value = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)
    return re.sub(r"\$\{\w+:\?[^}]*\}", "c2lnbm9mZi10ZXN0LWtleS0zMi1ieXRlcy1sb25nISE=", value)


def signoff_command(argv: list[str]) -> str:
    """The ``signoff`` subcommand ``argv`` runs, as the CLI parses it."""
    assert argv[0] == "signoff", argv
    args = cli._parser().parse_args(argv[1:])
    name: str = args.run.__name__
    return name.removeprefix("_")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    services: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())["services"]
    return services


def test_compose_runs_api_processes_workers_postgres_and_redis(
    compose: dict[str, Any],
) -> None:
    assert {"postgres", "redis", "migrate", "api", "worker", "lb"} <= compose.keys()
    assert signoff_command(compose["migrate"]["command"]) == "migrate"
    assert signoff_command(compose["api"]["command"]) == "serve"
    assert signoff_command(compose["worker"]["command"]) == "worker"
    for name in ("api", "worker"):
        assert compose[name]["build"] == "."
        assert compose[name]["deploy"]["replicas"] >= 2
        after = compose[name]["depends_on"]
        assert after["migrate"]["condition"] == "service_completed_successfully"
    assert compose["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    nginx = (DEPLOY / "nginx.conf").read_text()
    port = compose["api"]["environment"]["SIGNOFF_PORT"]
    assert compose["api"]["expose"] == [port] and f"http://api:{port}" in nginx
    assert "proxy_set_header Upgrade" in nginx


def test_compose_sets_only_settings_signoff_reads(compose: dict[str, Any]) -> None:
    known = settings_read()
    environments = {
        name: {key: interpolated(str(value)) for key, value in service["environment"].items()}
        for name, service in compose.items()
        if name in {"migrate", "api", "worker"}
    }
    for name, env in environments.items():
        signoff_keys = {key for key in env if key.startswith("SIGNOFF_")}
        assert signoff_keys <= known, (name, signoff_keys - known)
        assert env.keys() - signoff_keys <= {"FORWARDED_ALLOW_IPS"}, name
        settings = Settings.from_env(env)
        assert settings.database_url.startswith("postgresql+psycopg://"), name
        assert settings.redis_url and settings.secret_key, name
    shared = ("SIGNOFF_DATABASE_URL", "SIGNOFF_REDIS_URL", "SIGNOFF_SECRET_KEY")
    for key in shared:
        assert len({env[key] for env in environments.values()}) == 1, key
    assert "SIGNOFF_SECRET_KEY:?" in compose["api"]["environment"]["SIGNOFF_SECRET_KEY"]
    worker = environments["worker"]
    assert worker["SIGNOFF_METRICS_PORT"] in " ".join(compose["worker"]["healthcheck"]["test"])


def dockerfile() -> Iterator[tuple[str, str]]:
    """(instruction, arguments) of each instruction, continuation lines joined."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            instruction, _, arguments = line.strip().partition(" ")
            yield instruction.upper(), arguments.strip()


async def test_the_dockerfile_installs_the_lock_and_serves_as_a_user(app: Starlette) -> None:
    instructions = list(dockerfile())
    sent = {line.rstrip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()}
    for instruction, arguments in instructions:
        if instruction == "COPY" and not arguments.startswith("--from"):
            for source in arguments.split()[:-1]:
                assert (ROOT / source).exists(), source
                assert f"!{source.split('/')[0]}" in sent, f".dockerignore leaves out {source}"
    runs = " ".join(arguments for instruction, arguments in instructions if instruction == "RUN")
    installs = re.findall(r"pip install --require-hashes -r /src/(\S+)", runs)
    assert installs == ["requirements/build.txt", "requirements/serve.txt"]
    assert "--no-deps --no-build-isolation /src" in runs and " -e " not in runs

    final = instructions[max(i for i, (ins, _) in enumerate(instructions) if ins == "FROM") :]
    (user,) = [arguments for instruction, arguments in final if instruction == "USER"]
    assert user not in {"root", "0"}
    (cmd,) = [json.loads(arguments) for instruction, arguments in final if instruction == "CMD"]
    assert signoff_command(cmd) == "serve"
    (check,) = [arguments for instruction, arguments in final if instruction == "HEALTHCHECK"]
    probe = json.loads(check[check.index("CMD") + 3 :])
    assert probe[0] == "python" and "/readyz" in shlex.join(probe)
    assert any(isinstance(r, Route) and r.path == "/readyz" for r in app.routes)
