"""Refusing to run with a secret key other than the one the database was sealed with.

A process with the wrong key would seal new signing secrets that its peers cannot
open and fail every delivery of the old ones (``SIGNING_SECRET_UNREADABLE``); the
usual cause is a new ``signoff.key`` made by a process started in another directory.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import AuditKeyMismatch, SecretKeyMismatch
from signoff.evidence.audit_key import Signer
from signoff.evidence.sealing import Sealer, SealingError
from signoff.models import AUDIT_SIGNING, SIGNING_SECRETS, AuditCheckpoint, KeyCheck, Target


async def verify_secret_key(*, session: AsyncSession, sealer: Sealer) -> None:
    """Raise ``SecretKeyMismatch`` unless ``sealer`` has the database's key.

    The first key used with a database is recorded as its check value; a database
    from before the record existed is checked against its oldest sealed secret first.
    """
    recorded = await session.get(KeyCheck, SIGNING_SECRETS)
    if recorded is None:
        await _check_oldest_secret(session, sealer)
        recorded = await _record(session, sealer)
    if recorded.check_value != sealer.check_value():
        raise _mismatch(sealer)


async def _check_oldest_secret(session: AsyncSession, sealer: Sealer) -> None:
    sealed = (
        await session.exec(
            select(Target.signing_secret).order_by(col(Target.created_at), col(Target.id)).limit(1)
        )
    ).first()
    if sealed is None:
        return
    try:
        sealer.open(sealed)
    except SealingError:
        raise _mismatch(sealer) from None


async def _record(session: AsyncSession, sealer: Sealer) -> KeyCheck:
    return await _record_check(session, SIGNING_SECRETS, sealer.check_value())


async def _record_check(session: AsyncSession, purpose: str, value: str) -> KeyCheck:
    """Record this key, or return the one another process starting at once recorded."""
    check = KeyCheck(purpose=purpose, check_value=value)
    session.add(check)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        winner = await session.get(KeyCheck, purpose)
        assert winner is not None  # the insert failed on this very row
        return winner
    return check


async def verify_audit_key(*, session: AsyncSession, signer: Signer) -> None:
    """Raise ``AuditKeyMismatch`` unless ``signer`` has the key the database's audit
    checkpoints are signed with (recorded by the first process; a database with
    checkpoints from before the record is checked against its latest one)."""
    recorded = await session.get(KeyCheck, AUDIT_SIGNING)
    if recorded is None:
        latest = (
            await session.exec(
                select(AuditCheckpoint).order_by(col(AuditCheckpoint.size).desc()).limit(1)
            )
        ).first()
        if latest is not None and latest.key_id != signer.key_id:
            raise _audit_mismatch(signer)
        recorded = await _record_check(session, AUDIT_SIGNING, signer.check_value)
    if recorded.check_value != signer.check_value:
        raise _audit_mismatch(signer)


def _audit_mismatch(signer: Signer) -> AuditKeyMismatch:
    return AuditKeyMismatch(
        f"The audit signing key in {signer.source} is not the one this database's checkpoints "
        "are signed with; set SIGNOFF_AUDIT_SIGNING_KEY to the original key, or point "
        "SIGNOFF_AUDIT_SIGNING_KEY_FILE at the original key file."
    )


def _mismatch(sealer: Sealer) -> SecretKeyMismatch:
    return SecretKeyMismatch(
        f"The secret key in {sealer.source} does not match the one this database was sealed "
        "with; set SIGNOFF_SECRET_KEY to the original key, or point SIGNOFF_SECRET_KEY_FILE "
        "at the original key file."
    )
