"""The ``signoff`` command: serve, migrate, and manage tokens."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from signoff.config import Settings
from signoff.database import create_engine, create_sessionmaker
from signoff.errors import SignoffError
from signoff.migrate import migrate
from signoff.models import Role


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    settings = Settings.from_env()
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        args.run(args, settings)
    except SignoffError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="signoff", description=__doc__)
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="migrate the database and start the API")
    serve.add_argument("--host", help="default: SIGNOFF_HOST or 127.0.0.1")
    serve.add_argument("--port", type=int, help="default: SIGNOFF_PORT or 8000")
    serve.set_defaults(run=_serve)

    migrate_cmd = commands.add_parser("migrate", help="bring the database schema up to date")
    migrate_cmd.set_defaults(run=_migrate)

    token = commands.add_parser("token", help="manage API tokens")
    token_commands = token.add_subparsers(required=True, metavar="ACTION")
    create = token_commands.add_parser(
        "create", help="create (or reuse) an actor and print a new token on the last line")
    create.add_argument("--name", required=True)
    create.add_argument("--role", required=True, choices=[r.value for r in Role])
    create.add_argument("--queue", action="append", default=[], metavar="SLUG",
                        help="queue the actor reviews (repeatable)")
    create.set_defaults(run=_token_create)
    return parser


def _serve(args: argparse.Namespace, settings: Settings) -> None:
    import uvicorn

    from signoff.app import create_app

    asyncio.run(_migrate_only(settings))
    uvicorn.run(
        create_app(settings),
        host=args.host or settings.host,
        port=args.port or settings.port,
        log_level=settings.log_level,
        ws="websockets-sansio",
    )


def _migrate(_: argparse.Namespace, settings: Settings) -> None:
    asyncio.run(_migrate_only(settings))
    print("database is up to date")


async def _migrate_only(settings: Settings) -> None:
    engine = create_engine(settings.database_url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


def _token_create(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.actors import create_token

    async def run() -> str:
        engine = create_engine(settings.database_url)
        try:
            await migrate(engine)
            async with create_sessionmaker(engine)() as session:
                created = await create_token(session=session, name=args.name,
                                             role=Role(args.role), queue_slugs=args.queue)
                return created.token
        finally:
            await engine.dispose()

    token = asyncio.run(run())
    print(f"Token for {args.name} ({args.role}); it is shown once, keep it secret:",
          file=sys.stderr)
    print(token)
