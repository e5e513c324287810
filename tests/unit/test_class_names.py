"""No two public classes in signoff/ share a name, so that a name found in a traceback or a
review names one thing. A GraphQL type may share the name of what it shows: the table, or
the resolver value it translates, each pair listed here."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SIGNOFF = Path(__file__).resolve().parents[2] / "signoff"

# (name, the GraphQL type's module, the module of the table or value it shows)
SHOWN = {
    ("Actor", "schema/access/actor.py", "models/actor.py"),
    ("ApiToken", "schema/access/token.py", "models/actor.py"),
    ("Approval", "schema/approval/proposal.py", "models/approval.py"),
    ("ApprovalLink", "schema/reach/approval_link.py", "models/approval_link.py"),
    ("AuditCheckpoint", "schema/access/audit.py", "models/audit.py"),
    ("AuditEvent", "schema/access/audit.py", "models/audit.py"),
    ("ChangeEvent", "schema/change_event.py", "models/change_event.py"),
    ("DeadLetter", "schema/delivery/incident.py", "models/incident.py"),
    ("Delegation", "schema/reach/delegation.py", "models/delegation.py"),
    ("DeliveryAttempt", "schema/delivery/delivery.py", "models/delivery.py"),
    ("Draft", "schema/drafts/draft.py", "models/draft.py"),
    ("HumanTask", "schema/approval/task.py", "models/task.py"),
    ("Incident", "schema/delivery/incident.py", "models/incident.py"),
    ("NotificationChannel", "schema/reach/notification.py", "models/notification.py"),
    ("Proposal", "schema/approval/proposal.py", "models/proposal.py"),
    ("ProposalRevision", "schema/approval/proposal.py", "models/revision.py"),
    ("Queue", "schema/approval/queue.py", "models/queue.py"),
    ("ReconciliationRun", "schema/delivery/operations.py", "models/incident.py"),
    ("RepairAction", "schema/delivery/incident.py", "models/incident.py"),
    ("Target", "schema/delivery/target.py", "models/target.py"),
    ("ClaimMapping", "schema/access/claim_mapping.py", "oidc_settings.py"),
    ("DeadlinePolicy", "schema/reach/deadline.py", "resolvers/reach/deadlines.py"),
    ("DraftReference", "schema/drafts/draft_reference.py", "resolvers/drafts/reads.py"),
    ("OutboxStats", "schema/delivery/operations.py", "resolvers/incidents/operations.py"),
    ("DecisionTimes", "schema/delivery/operations.py", "resolvers/incidents/statistics.py"),
    (
        "OperationsStatistics",
        "schema/delivery/operations.py",
        "resolvers/incidents/statistics.py",
    ),
    ("QueueStats", "schema/approval/queue.py", "resolvers/approval/queue_stats.py"),
    ("RuleEvaluation", "schema/approval/policy.py", "resolvers/approval/policies.py"),
    ("Viewer", "schema/access/actor.py", "resolvers/access/rules.py"),
}


def public_classes() -> dict[str, list[str]]:
    """Each public top-level class name in signoff/, with the modules that define it."""
    defined: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SIGNOFF.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined[node.name].append(path.relative_to(SIGNOFF).as_posix())
    return defined


def test_no_two_public_classes_share_a_name() -> None:
    shown = {(name, *sorted((type_module, row_module))) for name, type_module, row_module in SHOWN}
    twice = [
        f"{name}: {' and '.join(modules)}"
        for name, modules in public_classes().items()
        if len(modules) > 1 and (name, *sorted(modules)) not in shown
    ]
    assert twice == [], "public classes defined twice:\n" + "\n".join(twice)


def test_every_listed_pair_still_exists() -> None:
    defined = public_classes()
    stale = [
        name
        for name, type_module, row_module in SHOWN
        if sorted(defined.get(name, [])) != sorted((type_module, row_module))
    ]
    assert stale == []
