"""Register the model enums with Strawberry, so GraphQL and the tables share one definition.

Schema modules annotate fields with the model enums themselves (``models.ProposalState``);
importing this module is what makes them GraphQL enums.
"""

from __future__ import annotations

import strawberry

from signoff import models

for _enum in (
    models.Role,
    models.ProposalState,
    models.TaskState,
    models.ApprovalMode,
    models.CircuitState,
    models.ApprovalLinkState,
    models.ChannelKind,
    models.DeadlineAction,
    models.Decision,
    models.IncidentState,
    models.Severity,
    models.DeadLetterState,
    models.ReconciliationState,
    models.DraftStatus,
    models.DraftSource,
    models.DraftOutcome,
    models.CancelReason,
):
    strawberry.enum(_enum)
