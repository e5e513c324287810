"""Which secret key a database's sealed values were sealed with, recorded without the key."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from signoff.models.base import time_field

# The purpose of the one key Signoff seals with today: webhook signing secrets.
SIGNING_SECRETS = "signing-secrets"
# The key that signs the audit log's checkpoints (``signoff.evidence.audit_key``).
AUDIT_SIGNING = "audit-signing"


class KeyCheck(SQLModel, table=True):
    """One row per purpose, written by the first process that used a key for it.

    ``check_value`` is ``Sealer.check_value()``: the same for the same key, and of no
    use in finding the key. The purpose is the primary key, so of two processes
    recording different keys at once, one insert fails.
    """

    __tablename__ = "key_checks"

    purpose: str = Field(sa_column=sa.Column(sa.String(50), primary_key=True))
    check_value: str = Field(sa_column=sa.Column(sa.String(64), nullable=False))
    created_at: datetime = time_field(default_now=True)
