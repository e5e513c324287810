"""The database records the first secret key, and the first audit signing key, used with
it and refuses any other."""

from __future__ import annotations

import asyncio
import os

import pytest

from signoff.database import SessionMaker
from signoff.errors import AuditKeyMismatch, SecretKeyMismatch
from signoff.events import auditlog, feed
from signoff.evidence.audit_key import signer_of
from signoff.evidence.sealing import Sealer, decode_key, new_key_text
from signoff.models import SIGNING_SECRETS, KeyCheck
from signoff.resolvers.core.key_check import verify_audit_key, verify_secret_key
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from tests.helpers import GraphQLClient, build_world


def new_sealer() -> Sealer:
    return Sealer(decode_key(new_key_text()))


async def verified(sessionmaker: SessionMaker, sealer: Sealer) -> bool:
    async with sessionmaker() as session:
        try:
            await verify_secret_key(session=session, sealer=sealer)
        except SecretKeyMismatch:
            return False
    return True


async def recorded(sessionmaker: SessionMaker) -> str | None:
    async with sessionmaker() as session:
        check = await session.get(KeyCheck, SIGNING_SECRETS)
        return None if check is None else check.check_value


async def test_the_first_key_is_recorded_and_only_it_is_accepted_after(
    sessionmaker: SessionMaker,
) -> None:
    first, other = new_sealer(), new_sealer()
    assert await verified(sessionmaker, first)
    assert await recorded(sessionmaker) == first.check_value()
    assert await verified(sessionmaker, first)
    assert not await verified(sessionmaker, other)
    assert await recorded(sessionmaker) == first.check_value()


async def test_a_database_sealed_before_key_checks_is_checked_against_its_secrets(
    gql: GraphQLClient, sessionmaker: SessionMaker
) -> None:
    await build_world(gql)  # a target sealed with the suite's key, and no key recorded
    with pytest.raises(SecretKeyMismatch, match="SIGNOFF_SECRET_KEY does not match"):
        async with sessionmaker() as session:
            await verify_secret_key(session=session, sealer=new_sealer())
    assert await recorded(sessionmaker) is None
    suite = Sealer(decode_key(os.environ["SIGNOFF_SECRET_KEY"]))
    assert await verified(sessionmaker, suite)
    assert await recorded(sessionmaker) == suite.check_value()


async def test_of_two_keys_recorded_at_once_one_wins(sessionmaker: SessionMaker) -> None:
    sealers = [new_sealer(), new_sealer()]
    outcomes = await asyncio.gather(*(verified(sessionmaker, s) for s in sealers))
    assert sorted(outcomes) == [False, True]
    [winner] = [s for s, ok in zip(sealers, outcomes, strict=True) if ok]
    assert await recorded(sessionmaker) == winner.check_value()


async def test_the_audit_signing_key_is_recorded_and_another_refused_in_one_sentence(
    sessionmaker: SessionMaker,
) -> None:
    first = signer_of(decode_key(new_key_text()))
    other = signer_of(decode_key(new_key_text()), "the audit key file /srv/signoff-audit.key")
    async with sessionmaker() as session:
        await verify_audit_key(session=session, signer=first)
        await verify_audit_key(session=session, signer=first)
        with pytest.raises(AuditKeyMismatch) as refused:
            await verify_audit_key(session=session, signer=other)
    message = str(refused.value)
    assert message.count(". ") == 0 and message.endswith(".")
    assert message.startswith("The audit signing key in the audit key file /srv/signoff-audit.key")


async def test_a_database_with_checkpoints_before_the_record_is_checked_against_them(
    sessionmaker: SessionMaker,
) -> None:
    """Checkpoints signed by one key, and no key recorded: another key is refused."""
    signer = signer_of(decode_key(new_key_text()))
    async with sessionmaker() as session:
        work = UnitOfWork(session)
        record(work, Happening(entity_type="t", entity_id="1", actor_id=None, action="t.done"))
        await work.commit()
        await feed.stamp_pending(session)
        checkpointer = auditlog.Checkpointer(lambda: signer, every_records=1, every_seconds=0)
        assert await checkpointer.run(session, force=True) is not None
        await session.commit()
        with pytest.raises(AuditKeyMismatch):
            await verify_audit_key(session=session, signer=signer_of(decode_key(new_key_text())))
        await verify_audit_key(session=session, signer=signer)
