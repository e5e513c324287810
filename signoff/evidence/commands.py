"""``signoff audit``: the public key, checkpoints, exports, and offline verification.

``verify`` and ``verify-receipt`` read files only: no database, no server, nothing of
Signoff but ``signoff.evidence.verify`` (docs/design.md section 15).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.config import Settings, load_audit_signer
from signoff.database import create_engine, create_sessionmaker
from signoff.evidence import verify
from signoff.migrate import migrate

T = TypeVar("T")
AddCommand = Callable[..., argparse.ArgumentParser]


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], command: AddCommand
) -> None:
    """``signoff audit …``; ``command`` is the CLI's way of adding a described subcommand."""
    audit = command(
        commands,
        "audit",
        "export and verify the audit log, its signed checkpoints and decision receipts",
    )
    audit.set_defaults(log_migrations=False)
    actions = audit.add_subparsers(required=True, metavar="ACTION", title="actions")
    public_key = command(
        actions,
        "public-key",
        "print the public key that verifies this database's checkpoints",
        "Also served at /.well-known/signoff-audit-key. Keep a copy where the operator "
        "cannot change it.",
    )
    public_key.set_defaults(run=_public_key)
    checkpoint = command(
        actions,
        "checkpoint",
        "sign a checkpoint of the log now, if it grew, and print the latest one",
        "Servers and workers sign one every SIGNOFF_AUDIT_CHECKPOINT_RECORDS records or "
        "SIGNOFF_AUDIT_CHECKPOINT_SECONDS seconds.",
    )
    checkpoint.set_defaults(run=_checkpoint)
    export = command(
        actions,
        "export",
        "write the log as JSON lines: every record and signed checkpoint",
    )
    export.add_argument(
        "--since",
        type=int,
        default=0,
        metavar="POSITION",
        help="start at the last checkpoint at or before this position (default: the start)",
    )
    export.set_defaults(run=_export)
    check = command(
        actions,
        "verify",
        "recompute an export offline and name the first position that does not verify",
        "Needs no database and no server. Exits 0 when everything verifies, 1 otherwise.",
    )
    check.add_argument("log", type=Path, help="the export (JSON lines)")
    check.add_argument("--public-key", required=True, help="the key, or a file holding it")
    check.add_argument(
        "--checkpoint",
        type=Path,
        action="append",
        default=[],
        help="a checkpoint kept from before (JSON), which the log must still extend",
    )
    check.set_defaults(run=_verify)
    receipt = command(
        actions,
        "verify-receipt",
        "check a decision receipt offline against its signed checkpoint",
        "Exits 0 when it verifies, 1 otherwise.",
    )
    receipt.add_argument("receipt", type=Path, help="the receipt (JSON)")
    receipt.add_argument("--public-key", required=True, help="the key, or a file holding it")
    receipt.set_defaults(run=_verify_receipt)


def _in_session(settings: Settings, command: Callable[[AsyncSession], Awaitable[T]]) -> T:
    async def run() -> T:
        engine = create_engine(settings.database_url)
        try:
            await migrate(engine)
            async with create_sessionmaker(engine)() as session:
                return await command(session)
        finally:
            await engine.dispose()

    return asyncio.run(run())


def _public_key(_: argparse.Namespace, settings: Settings) -> None:
    print(load_audit_signer(settings).public_key)


def _checkpoint(_: argparse.Namespace, settings: Settings) -> None:
    from signoff.events import auditlog, feed
    from signoff.resolvers.core.key_check import verify_audit_key

    signer = load_audit_signer(settings)

    async def sign(session: AsyncSession) -> dict[str, Any] | None:
        await verify_audit_key(session=session, signer=signer)
        await feed.stamp_pending(session)  # records nobody stamped yet
        await session.commit()
        checkpointer = auditlog.Checkpointer(lambda: signer, every_records=1, every_seconds=0)
        await checkpointer.run(session, force=True)
        await session.commit()
        latest = await auditlog.latest_checkpoint(session)
        await session.commit()
        return None if latest is None else auditlog.as_document(latest)

    latest = _in_session(settings, sign)
    if latest is None:
        print("The audit log is empty: nothing to sign.", file=sys.stderr)
        return
    print(json.dumps(latest))


def _export(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.events import auditlog, feed

    async def export(session: AsyncSession) -> int:
        await feed.stamp_pending(session)
        await session.commit()
        count = 0
        async for line in auditlog.export_lines(session, auditlog.LeafCache(), args.since):
            sys.stdout.write(line + "\n")
            count += 1
        await session.commit()
        return count

    _in_session(settings, export)
    sys.stdout.flush()


def _key(text: str) -> Any:
    path = Path(text)
    if not text.startswith(verify.PUBLIC_KEY_PREFIX) and path.is_file():
        text = path.read_text()
    try:
        return verify.load_public_key(text)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


def _verify(args: argparse.Namespace, _: Settings) -> None:
    key = _key(args.public_key)
    kept = [json.loads(path.read_text()) for path in args.checkpoint]
    with args.log.open(encoding="utf-8") as lines:
        verdict = verify.verify_export(lines, key, kept=kept)
    _report(verdict)


def _verify_receipt(args: argparse.Namespace, _: Settings) -> None:
    key = _key(args.public_key)
    verdict = verify.verify_receipt(json.loads(args.receipt.read_text()), key)
    _report(verdict)


def _report(verdict: verify.Verdict) -> None:
    print(verdict.summary())
    for note in verdict.notes:
        print(f"note: {note}")
    if not verdict.ok:
        sys.exit(1)
