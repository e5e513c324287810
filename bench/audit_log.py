"""Exporting and verifying the audit log: ``signoff audit export`` and ``signoff audit
verify`` on a log of ``--records`` records (default 1,000,000).

A new database (a SQLite file in a temporary directory, or ``--database-url``, which must
be empty) is migrated and filled with approval records of the worked example's shape,
positioned and hashed as the sequencer does (``auditlog.entry``, ``entry_hash``), with a
checkpoint signed every ``--every`` records (default 1,000) as the upkeep signs them.
Then the two commands run as an operator and an auditor run them, each timed as one
process from start to exit: the export to a file, the verify of that file.

    python bench/audit_log.py
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import sqlalchemy as sa

from signoff import clock
from signoff.database import create_engine, create_sessionmaker
from signoff.events import auditlog
from signoff.evidence.audit_key import signer_of
from signoff.evidence.sealing import decode_key, new_key_text
from signoff.evidence.verify import entry_hash
from signoff.migrate import migrate
from signoff.models.base import new_id

BATCH = 10_000


class Row:
    """An audit record's columns, as ``auditlog.entry`` reads them."""

    def __init__(self, number: int, created_at: object) -> None:
        self.id = new_id()
        self.action = "approval.approved"
        self.actor_id = None
        self.target_type = "proposal"
        self.target_id = new_id()
        self.details = {
            "approval_id": new_id(),
            "payload_digest": "sha256:" + f"{number:064x}",
            "revision": 1,
            "reason": "Matches the returned parcel.",
        }
        self.created_at = created_at


async def fill(url: str, records: int, every: int, key: str) -> float:
    """The log of ``records`` records and its checkpoints; returns the seconds it took."""
    engine = create_engine(url)
    started = time.perf_counter()
    try:
        await migrate(engine)
        signer = signer_of(decode_key(key))
        cache = auditlog.LeafCache()
        sessionmaker = create_sessionmaker(engine)
        base = clock.now() - timedelta(days=1)
        last = None
        for start in range(0, records, BATCH):
            rows = []
            for position in range(start, min(start + BATCH, records)):
                row = Row(position, base + timedelta(microseconds=position))
                entry = auditlog.entry(position, row)
                rows.append(
                    {
                        "id": row.id,
                        "action": row.action,
                        "actor_id": None,
                        "target_type": row.target_type,
                        "target_id": row.target_id,
                        "details": row.details,
                        "created_at": row.created_at,
                        "position": position,
                        "leaf_hash": entry_hash(entry).hex(),
                    }
                )
            async with sessionmaker() as session:
                connection = await session.connection()
                await connection.execute(sa.insert(auditlog.AUDIT), rows)
                size = start + len(rows)
                # The migration made the state row (it built the empty log).
                await connection.execute(sa.update(auditlog.STATE).values(audit_size=size))
                for checkpoint_size in range(start + every, size + 1, every):
                    last = await auditlog.sign_checkpoint(
                        session, signer, cache, checkpoint_size, last
                    )
                await session.commit()
    finally:
        await engine.dispose()
    return time.perf_counter() - started


def timed(argv: list[str], env: dict[str, str], out: Path | None = None) -> tuple[float, str]:
    started = time.perf_counter()
    with open(out, "w") if out else open(os.devnull, "w") as sink:
        result = subprocess.run(
            argv, env=env, stdout=sink if out else subprocess.PIPE, text=True, check=True
        )
    return time.perf_counter() - started, "" if out else result.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--database-url", help="an empty database (default: a new SQLite file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        here = Path(directory)
        url = args.database_url or f"sqlite+aiosqlite:///{here / 'bench.db'}"
        key = new_key_text()
        filled = asyncio.run(fill(url, args.records, args.every, key))
        env = {
            **os.environ,
            "SIGNOFF_DATABASE_URL": url,
            "SIGNOFF_AUDIT_SIGNING_KEY": key,
            "SIGNOFF_LOG_LEVEL": "warning",
        }
        signoff = [sys.executable, "-m", "signoff", "audit"]
        public_key = here / "audit.pub"
        public_key.write_text(timed([*signoff, "public-key"], env)[1] + "\n")
        log = here / "log.jsonl"
        exported, _ = timed([*signoff, "export"], env, log)
        offline = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
        verified, said = timed(
            [*signoff, "verify", str(log), "--public-key", str(public_key)], offline
        )
        megabytes = log.stat().st_size / 1e6
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    kind = url.split(":")[0]
    print(f"database: {kind}; {args.records:,} records, a checkpoint every {args.every:,}")
    print(f"fill (not timed as a figure): {filled:.1f} s")
    print(
        f"export: {exported:.1f} s, {args.records / exported:,.0f} records/s, {megabytes:,.0f} MB"
    )
    print(f"verify: {verified:.1f} s, {args.records / verified:,.0f} records/s")
    print(f"verify said: {said}")


if __name__ == "__main__":
    main()
