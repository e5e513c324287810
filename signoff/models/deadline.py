"""Deadline policies: what happens to a proposal nobody approved by its ``expires_at``."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field

from signoff.models.base import json_field


class DeadlineAction(StrEnum):
    """Never an approval: a deadline can only close a proposal or hand it on."""

    EXPIRE = "EXPIRE"  # cancelled, its task expired (the behaviour before policies)
    REJECT = "REJECT"  # rejected with the policy's reason
    ESCALATE = "ESCALATE"  # moved to the next queue of the chain with a new deadline


def deadline_action_field() -> Any:
    return Field(
        default=DeadlineAction.EXPIRE,
        sa_column=sa.Column(sa.String(16), nullable=False, server_default="EXPIRE"),
    )


def deadline_reason_field() -> Any:
    return Field(default=None, sa_column=sa.Column(sa.String(2000), nullable=True))


def escalation_chain_field() -> Any:
    """``[{"queueId": ..., "deadlineSeconds": ...}, ...]``: the queues an ``ESCALATE``
    policy hands the proposal to, in order, each with the time it gets there."""
    return json_field(default=[])
