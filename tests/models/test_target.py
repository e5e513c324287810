"""The targets table holds what the resolvers store in it."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from signoff.database import SessionMaker
from signoff.evidence.sealing import Sealer, decode_key, new_key_text
from signoff.models import Actor, ApprovalMode, Role, Target
from signoff.resolvers.targets.targets import new_signing_secret


async def test_the_longest_sealed_signing_secret_fits_its_column(
    engine: AsyncEngine, sessionmaker: SessionMaker
) -> None:
    """Signing secrets are only ever made by Signoff, all of one length; sealed, the longest
    must fit the column as migrated (PostgreSQL enforces its length, SQLite does not)."""
    assert len({len(new_signing_secret()) for _ in range(20)}) == 1
    sealed = Sealer(decode_key(new_key_text())).seal(new_signing_secret())
    async with engine.connect() as conn:
        columns = await conn.run_sync(lambda c: sa.inspect(c).get_columns("targets"))
    [column] = [c for c in columns if c["name"] == "signing_secret"]
    assert len(sealed) <= column["type"].length

    async with sessionmaker() as session:
        actor = Actor(name="operator", role=Role.OPERATOR)
        session.add(actor)
        await session.flush()
        target = Target(
            name="longest-secret",
            url="http://127.0.0.1:9/hook",
            approval_mode=ApprovalMode.BOUNDED_AUTO,
            signing_secret=sealed,
            created_by_id=actor.id,
        )
        session.add(target)
        await session.commit()
    async with sessionmaker() as session:
        stored = await session.get(Target, target.id)
        assert stored is not None and stored.signing_secret == sealed
