"""The model enums, exposed to GraphQL under their own names."""

from __future__ import annotations

import strawberry

from signoff import models

Role = strawberry.enum(models.Role, name="Role")
ProposalState = strawberry.enum(models.ProposalState, name="ProposalState")
TaskState = strawberry.enum(models.TaskState, name="TaskState")
ApprovalMode = strawberry.enum(models.ApprovalMode, name="ApprovalMode")
Decision = strawberry.enum(models.Decision, name="Decision")
