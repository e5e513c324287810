"""The signoff command: serve, deliver, migrate, print the schema, manage tokens and actors."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import shlex
import sys
import textwrap
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from signoff import logs
from signoff.config import Settings, load_audit_signer, load_sealer
from signoff.constants import GC_THRESHOLDS, GIL_SWITCH_INTERVAL_SECONDS
from signoff.database import (
    DATABASE_MISSING,
    create_engine,
    create_sessionmaker,
    database_condition,
    is_unreachable,
)
from signoff.errors import SignoffError
from signoff.evidence import commands as audit_commands
from signoff.evidence.sealing import SealingError
from signoff.migrate import migrate
from signoff.models import Role

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

    from signoff.events.service import EventService
    from signoff.resolvers.core.work import UnitOfWork

T = TypeVar("T")

# SQLite's condition for a database file it cannot open (a missing folder, no permission).
SQLITE_CANNOT_OPEN = "SQLITE_CANTOPEN"
# Columns the help's paragraphs are wrapped to (argparse's own option lines follow the
# terminal).
HELP_WIDTH = 78


# The agents' client is installed from this repository (it is not published on PyPI).
MCP_INSTALL = "from a checkout of the Signoff repository, pip install './clients/python[mcp]'"


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except ValueError as exc:  # a setting, or the claim mapping file, that cannot be used
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    logs.configure(settings.log_level, settings.log_format)
    if args.migration_lines != "each":
        # Alembic says a line per migration: `signoff migrate` shows them, a server says
        # one line for the whole upgrade (a fresh database has many), and a token or actor
        # command, which migrates first as every command does, says nothing of it: its
        # output is its answer (a token, a sentence).
        logging.getLogger("alembic").setLevel(logging.WARNING)
    if args.migration_lines == "none":
        logging.getLogger("signoff.migrate").setLevel(logging.WARNING)
    missing = _missing_sqlite_folder(settings) if args.run not in _NO_DATABASE else None
    if missing is not None:
        print(
            f"error: cannot open the SQLite database {settings.database_url}: its folder "
            f"{missing} does not exist; create it, or point SIGNOFF_DATABASE_URL elsewhere.",
            file=sys.stderr,
        )
        sys.exit(2)
    try:
        args.run(args, settings)
    except (SignoffError, SealingError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except Exception as exc:
        unreachable = _unreachable_service(exc, settings)
        if unreachable is None:
            raise
        print(f"error: {unreachable}", file=sys.stderr)
        sys.exit(2)


def _missing_sqlite_folder(settings: Settings) -> Path | None:
    """The folder a SQLite database file would be created in, when it does not exist.

    Checked before connecting: aiosqlite reports a failed open from its own thread after
    the command's event loop has closed, as a stack trace.
    """
    from sqlalchemy.engine import make_url

    url = make_url(settings.database_url)
    if not url.drivername.startswith("sqlite") or url.database in (None, "", ":memory:"):
        return None
    folder = Path(url.database).parent
    return None if folder.is_dir() else folder


def _unreachable_service(exc: Exception, settings: Settings) -> str | None:
    """What to tell someone whose command could not reach its database or Redis, or None
    for any other failure. Never the driver's message or a password."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import InvalidResponse
    from redis.exceptions import TimeoutError as RedisTimeoutError
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import DBAPIError

    if isinstance(exc, DBAPIError):
        condition = database_condition(exc)
        if not (is_unreachable(exc) or condition == SQLITE_CANNOT_OPEN):
            return None
        url = make_url(settings.database_url)
        where = url.render_as_string(hide_password=True)
        if condition == DATABASE_MISSING:
            return _missing_database(url)
        if condition == SQLITE_CANNOT_OPEN:
            return (
                f"cannot open the SQLite database {where}: check that its folder exists and "
                "is writable, or point SIGNOFF_DATABASE_URL elsewhere."
            )
        return (
            f"cannot reach the database at {where} ({condition or 'no answer'}); start it, "
            "or point SIGNOFF_DATABASE_URL at one that runs, then try again."
        )
    if isinstance(exc, RedisConnectionError | RedisTimeoutError) and settings.redis_url:
        where = make_url(settings.redis_url).render_as_string(hide_password=True)
        return (
            f"cannot reach Redis at {where}; start it, or point SIGNOFF_REDIS_URL at one "
            "that runs, then try again."
        )
    if isinstance(exc, InvalidResponse) and settings.redis_url:
        where = make_url(settings.redis_url).render_as_string(hide_password=True)
        return (
            f"something answered at {where}, but not as Redis does (another service on "
            "that port?); point SIGNOFF_REDIS_URL at a Redis server, then try again."
        )
    return None


def _missing_database(url: URL) -> str:
    """How to create the PostgreSQL database that ``url`` names and the server lacks."""
    name = url.database or ""
    createdb = ["createdb"]
    for flag, value in (("-h", url.host), ("-p", url.port), ("-U", url.username)):
        if value is not None:
            createdb += [flag, str(value)]
    createdb.append(name)
    quoted = name.replace('"', '""')
    return (
        f"the database {name!r} does not exist on the PostgreSQL server of "
        f"{url.render_as_string(hide_password=True)}; create it "
        f'(`{shlex.join(createdb)}`, or `CREATE DATABASE "{quoted}";` in psql), or point '
        "SIGNOFF_DATABASE_URL at one that exists, then try again."
    )


_SUMMARY = (
    "Signoff puts a human review step between automated systems and the outside world: "
    "agents propose actions, reviewers approve them, and approved actions are delivered "
    "to their targets.",
    "serve runs the GraphQL API and the review console; worker delivers approved actions "
    "from Redis's job queue (beside serve, when SIGNOFF_REDIS_URL is set); receiver is a "
    "demo target that prints what it receives; migrate and schema look after the database "
    "and the schema; token and actor manage who may call the API; audit exports the "
    "tamper-evident audit log and verifies exports and decision receipts offline.",
    "Settings come from SIGNOFF_* environment variables (listed in docs/configuration.md). "
    "Run 'signoff COMMAND --help' for a command's options.",
)


def _paragraphs(*texts: str) -> str:
    """Help text of several paragraphs, wrapped here (argparse would join them into one)."""
    return "\n\n".join(textwrap.fill(text, HELP_WIDTH) for text in texts)


def _command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    *description: str,
) -> argparse.ArgumentParser:
    """A subcommand with a one-line ``help`` in its parent's list and a ``description``
    (the help, then more paragraphs) on its own ``--help``."""
    return commands.add_parser(
        name,
        help=help,
        description=_paragraphs(f"{help[0].upper()}{help[1:]}.", *description),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="signoff",
        description=_paragraphs(*_SUMMARY),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(migration_lines="each")
    commands = parser.add_subparsers(required=True, metavar="COMMAND", title="commands")

    serve = _command(
        commands,
        "serve",
        "migrate the database and start the API",
        "Serves GraphQL at /graphql (GraphiQL in a browser), the review console at /, and "
        "/healthz, /readyz and /metrics. Without SIGNOFF_REDIS_URL it also delivers "
        "approved actions and carries live events in-process.",
    )
    serve.add_argument(
        "--host", help="address to listen on (default: SIGNOFF_HOST, else 127.0.0.1)"
    )
    serve.add_argument(
        "--port", type=int, help="port to listen on (default: SIGNOFF_PORT, else 8000)"
    )
    serve.set_defaults(run=_serve, migration_lines="summary")

    worker = _command(
        commands,
        "worker",
        "run an arq worker that delivers approved actions (needs SIGNOFF_REDIS_URL)",
        "It also runs the periodic sweeps: deadlines, reminders, notifications, "
        "reconciliation and draft retention. Run as many as you like beside 'signoff serve'.",
    )
    worker.set_defaults(run=_worker, migration_lines="summary")

    receiver = _command(
        commands,
        "receiver",
        "run a demo webhook receiver that verifies each delivery's signature and prints it",
        "Register http://HOST:PORT/ as a target's URL to watch approved actions arrive.",
    )
    receiver.add_argument("--host", default="127.0.0.1", help="address (default: %(default)s)")
    receiver.add_argument("--port", type=int, default=9000, help="port (default: %(default)s)")
    receiver.add_argument(
        "--secret",
        help="the target's whsec_ signing secret "
        "(default: SIGNOFF_RECEIVER_SECRET; without either nothing is verified)",
    )
    receiver.add_argument(
        "--status", type=int, default=200, help="HTTP status to answer (default: %(default)s)"
    )
    receiver.set_defaults(run=_receiver)

    migrate_cmd = _command(
        commands,
        "migrate",
        "bring the database schema up to date",
        "serve, worker, token and actor do this too before anything else; run it alone to "
        "upgrade before starting new processes.",
    )
    migrate_cmd.set_defaults(run=_migrate)

    schema_cmd = _command(
        commands, "schema", "print the GraphQL schema (SDL), as checked in at schema.graphql"
    )
    schema_cmd.set_defaults(run=_schema)

    mcp = _command(
        commands,
        "mcp",
        "run the MCP server for agents (signoff-approvals-client's signoff-approvals-mcp), "
        "a client of SIGNOFF_URL as SIGNOFF_TOKEN (stdio) or as each client's own bearer "
        "token (http)",
        f"Needs the signoff-approvals-client package with its mcp extra, which is not on "
        f"PyPI: {MCP_INSTALL}. docs/agents.md says how to configure an MCP client.",
    )
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="for http (default: %(default)s)")
    mcp.add_argument("--port", default="8765", help="for http (default: %(default)s)")
    mcp.add_argument(
        "--public-url", help="for http: where clients reach /mcp (default: http://HOST:PORT/mcp)"
    )
    mcp.add_argument(
        "--authorization-server",
        help="for http: where clients get tokens (default: SIGNOFF_MCP_AUTHORIZATION_SERVER, "
        "else SIGNOFF_URL)",
    )
    mcp.set_defaults(run=_mcp, migration_lines="none")

    _token_commands(commands)
    _actor_commands(commands)
    audit_commands.add_commands(commands, _command)
    return parser


def _token_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = _command(commands, "token", "create and revoke API tokens")
    token.set_defaults(migration_lines="none")
    token_commands = token.add_subparsers(required=True, metavar="ACTION", title="actions")
    create = _command(
        token_commands,
        "create",
        "create (or reuse) an actor and print a new token on the last line",
        "The token is shown once: keep it secret. Clients send it as "
        "'Authorization: Bearer TOKEN'.",
    )
    create.add_argument("--name", required=True, help="the actor's name")
    create.add_argument(
        "--role",
        choices=[r.value for r in Role],
        help="required for a new actor; an existing actor keeps its own "
        "(change it with 'signoff actor set-role')",
    )
    create.add_argument(
        "--queue",
        action="append",
        default=[],
        metavar="SLUG",
        help="a queue the actor reviews (repeatable; default: none)",
    )
    create.set_defaults(run=_token_create)

    revoke = _command(
        token_commands,
        "revoke",
        "revoke one token, or every token of an actor",
        "Running servers refuse a revoked token within SIGNOFF_AUTH_CACHE_SECONDS (2 s by "
        "default), and close its open websockets at once where events travel through Redis.",
    )
    which = revoke.add_mutually_exclusive_group(required=True)
    which.add_argument("--name", help="revoke every token of this actor")
    which.add_argument(
        "--token", help="revoke this token; '-' reads it from stdin (keeping it out of ps)"
    )
    revoke.set_defaults(run=_token_revoke)


def _actor_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    actor = _command(
        commands, "actor", "change an actor's role, disable and enable it, or link it to a person"
    )
    actor.set_defaults(migration_lines="none")
    actor_commands = actor.add_subparsers(required=True, metavar="ACTION", title="actions")
    set_role = _command(
        actor_commands,
        "set-role",
        "change an actor's role",
        "Its tokens act with the new role; running servers see it within "
        "SIGNOFF_AUTH_CACHE_SECONDS (2 s by default).",
    )
    set_role.add_argument("--name", required=True, help="the actor's name")
    set_role.add_argument(
        "--role", required=True, choices=[r.value for r in Role], help="its new role"
    )
    set_role.set_defaults(run=_actor_set_role)

    disable = _command(
        actor_commands,
        "disable",
        "refuse every token of an actor (FORBIDDEN) until it is enabled",
        "Its tokens are kept. Running servers refuse them within SIGNOFF_AUTH_CACHE_SECONDS "
        "(2 s by default).",
    )
    disable.add_argument("--name", required=True, help="the actor's name")
    disable.set_defaults(run=_actor_disable)
    enable = _command(
        actor_commands,
        "enable",
        "let a disabled actor's tokens work again",
        "Tokens revoked meanwhile stay revoked.",
    )
    enable.add_argument("--name", required=True, help="the actor's name")
    enable.set_defaults(run=_actor_enable)
    link_slack = _command(
        actor_commands,
        "link-slack",
        "let a Slack user decide as this actor from Signoff's Slack messages",
        "Their clicks then decide as the actor, with its queues as they are at each click "
        "(docs/slack.md).",
    )
    link_slack.add_argument("--name", required=True, help="the actor's name")
    link_slack.add_argument(
        "--slack-user", required=True, help="the Slack user's id (U…), from their profile"
    )
    link_slack.set_defaults(run=_actor_link_slack)
    _person_commands(actor_commands)


def _person_commands(actor_commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    link = _command(
        actor_commands,
        "link",
        "make an actor the same person as another actor, or as a sign-in",
        "Actors of one person have one vote in a quorum, and none on what that person "
        "proposed or amended. An actor made by sign-in is the person its issuer and "
        "subject name: link someone's old token actor to their sign-in with --to NAME (the "
        "signed-in actor), or with --issuer and --subject before they first sign in. "
        "Approvals still waiting for their quorum count the person once from now on. "
        "'signoff serve' warns at start about reviewers, operators and admins with tokens "
        "who are linked to no one while SIGNOFF_OIDC_ISSUER is set.",
    )
    link.add_argument("--name", required=True, help="the actor to link (e.g. a token actor)")
    link.add_argument("--to", help="the actor of the same person (e.g. the signed-in one)")
    link.add_argument("--issuer", help="the identity provider's issuer (SIGNOFF_OIDC_ISSUER)")
    link.add_argument("--subject", help="the person's subject (sub) at that issuer")
    link.set_defaults(run=_actor_link)
    unlink = _command(
        actor_commands,
        "unlink",
        "make an actor stand for itself alone again",
        "Decisions it made stay as they were made.",
    )
    unlink.add_argument("--name", required=True, help="the actor's name")
    unlink.set_defaults(run=_actor_unlink)


def _serve(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.web.app import create_app
    from signoff.web.serving import PortInUse, check_port_free, serve

    host, port = args.host or settings.host, args.port or settings.port
    try:
        check_port_free(host, port)
    except PortInUse as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    _prepare(settings)
    _warn_unlinked(settings)
    greeting = _greeting(settings, host, port)
    _tune_for_serving()
    app = create_app(settings)
    # What the app and its start-up made (the schema, the engine and its pool, the event
    # service) lives as long as the process too; left in the young generation, it was
    # traversed by the first young collections, which fell in the first storm of sockets
    # (BENCHMARKS.md, hostile subscribers).
    serve(app, settings, host=host, port=port, greeting=greeting, on_started=_freeze_survivors)


def _greeting(settings: Settings, host: str, port: int) -> list[str]:
    """What a server says once it listens: where to go, and on a fresh installation, the
    command that gives someone access (nothing can be done without a token)."""
    from signoff.resolvers.access.actors import has_actors

    base = settings.public_url or f"http://{_browsable(host)}:{port}"
    lines = [f"Signoff is serving: the review console at {base}/ and GraphiQL at {base}/graphql"]
    if not _in_work(settings, lambda work: has_actors(session=work.session)):
        lines.append(
            "No one has access yet: in another terminal, make an admin token with "
            f"`{_this_command()} token create --name ops --role admin`"
        )
    return lines


def _browsable(host: str) -> str:
    """The host part of a URL a browser on this machine opens for ``host``."""
    if host in ("", "0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def _this_command() -> str:
    """How the person who started this server runs ``signoff`` (``.venv/bin/signoff`` after
    ``make serve``)."""
    invoked = Path(sys.argv[0])
    if invoked.name != "signoff":
        return "signoff"
    try:
        return str(invoked.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(invoked)


def _tune_for_serving() -> None:
    """Interpreter settings for a long-lived server with many sockets (see BENCHMARKS.md)."""
    # The event loop hands SQLite work to aiosqlite's threads; while the loop is busy (a
    # broadcast to many sockets) a thread with a finished query waits for the GIL for up
    # to the switch interval, once per statement.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_SECONDS)
    # Start-up objects (schema, mappers, modules) live as long as the process: keep them
    # out of every collection. Most later objects die by reference count; collecting the
    # young generation far less often keeps them from being promoted, so full
    # collections, which pause the loop for long once many subscribers are connected,
    # become rare (BENCHMARKS.md).
    _freeze_survivors()
    gc.set_threshold(*GC_THRESHOLDS)


def _freeze_survivors() -> None:
    """Keep every object alive now out of all later collections."""
    gc.collect()  # garbage frozen would never be collected
    gc.freeze()


def _worker(_: argparse.Namespace, settings: Settings) -> None:
    from signoff.errors import ValidationFailed
    from signoff.jobs.worker import run

    if settings.redis_url is None:
        raise ValidationFailed(
            "signoff worker needs SIGNOFF_REDIS_URL; without Redis, "
            "`signoff serve` delivers in-process."
        )
    _prepare(settings)
    # The same reasons hold for a worker: garbage collections of its start-up objects
    # pause every delivery in flight (BENCHMARKS.md, delivery latency).
    _tune_for_serving()
    run(settings)


def _receiver(args: argparse.Namespace, settings: Settings) -> None:
    import os

    import uvicorn

    from signoff.receiver import create_receiver

    secret = args.secret or os.environ.get("SIGNOFF_RECEIVER_SECRET")
    print(
        f"Receiving on http://{args.host}:{args.port}/ "
        f"({'verifying signatures' if secret else 'NOT verifying: pass --secret'})",
        file=sys.stderr,
    )
    uvicorn.run(
        create_receiver(secret, status=args.status),
        host=args.host,
        port=args.port,
        log_level="warning",
    )


def _migrate(_: argparse.Namespace, settings: Settings) -> None:
    asyncio.run(_migrate_only(settings))
    print("database is up to date")


def _mcp(args: argparse.Namespace, _: Settings) -> None:
    """Hand over to signoff-approvals-client's MCP server (a client of a running Signoff, so it
    needs no database: it is never a dependency of the server itself)."""
    try:
        from signoff_client.mcp_server import main as mcp_main
    except ImportError as exc:
        raise SystemExit(
            f"error: signoff mcp needs signoff-approvals-client with its mcp extra ({exc}); "
            f"{MCP_INSTALL}"
        ) from None
    options = ["--transport", args.transport, "--host", args.host, "--port", args.port]
    for name, value in (
        ("--public-url", args.public_url),
        ("--authorization-server", args.authorization_server),
    ):
        options += [name, value] if value else []
    mcp_main(options)


def _schema(_: argparse.Namespace, __: Settings) -> None:
    from signoff.schema import build_schema

    print(build_schema().as_str())


async def _migrate_only(settings: Settings) -> None:
    engine = create_engine(settings.database_url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()


def _prepare(settings: Settings) -> None:
    """Migrate, and refuse to go on with a secret key or an audit signing key other than the
    database's."""
    from signoff.resolvers.core.key_check import verify_audit_key, verify_secret_key

    sealer, signer = load_sealer(settings), load_audit_signer(settings)

    async def check(work: UnitOfWork) -> None:
        await verify_secret_key(session=work.session, sealer=sealer)
        await verify_audit_key(session=work.session, signer=signer)

    _in_work(settings, check)


def _in_work(settings: Settings, command: Callable[[UnitOfWork], Awaitable[T]]) -> T:
    """Migrate, then run ``command`` in one unit of work: how the CLI's commands reach the
    database (no job queue, no event relay: the serving processes' relay publishes what
    a command changed)."""

    async def run() -> T:
        from signoff.events import create_event_service
        from signoff.resolvers.core.work import WorkMaker

        engine = create_engine(settings.database_url)
        events = None
        try:
            await migrate(engine)
            sessionmaker = create_sessionmaker(engine)
            async with WorkMaker(sessionmaker)() as work:
                result = await command(work)
            # Live streams learn of what the command changed (a revoked token, a new
            # role) at once where events travel through Redis.
            if settings.redis_url is not None:
                events = create_event_service(settings, sessionmaker)
                await _announce(events)
            return result
        finally:
            if events is not None:
                await events.hub.transport.stop()
            await engine.dispose()

    return asyncio.run(run())


async def _announce(events: EventService) -> None:
    """Publish the command's change events; a failure leaves them to the serving
    processes' relay, never fails the command that already committed."""
    try:
        await events.announce()
    except Exception as exc:
        logging.getLogger("signoff.cli").warning(
            "publishing change events failed (%s); the serving processes' relay sends them",
            type(exc).__name__,
        )


def _token_create(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.access.actors import create_token

    role = None if args.role is None else Role(args.role)
    created = _in_work(
        settings,
        lambda work: create_token(work=work, name=args.name, role=role, queue_slugs=args.queue),
    )
    actor = created.actor
    print(
        f"Token for {actor.name} ({Role(actor.role).value}), actor id {actor.id}; "
        "it is shown once, keep it secret:",
        file=sys.stderr,
    )
    print(created.token)


def _token_revoke(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.access.actors import revoke_actor_tokens, revoke_token

    if args.token is None:
        revoked = _in_work(settings, lambda work: revoke_actor_tokens(work=work, name=args.name))
        if not revoked.token_ids:
            print(f"{revoked.actor.name} has no tokens left to revoke.")
            return
    else:
        token = sys.stdin.readline() if args.token == "-" else args.token
        revoked = _in_work(settings, lambda work: revoke_token(work=work, token=token))
        if not revoked.token_ids:
            print(f"That token of {revoked.actor.name} was revoked already.")
            return
    count = len(revoked.token_ids)
    print(f"Revoked {count} token{'' if count == 1 else 's'} of {revoked.actor.name}.")


def _actor_set_role(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.access.actors import role_phrase, set_actor_role

    change = _in_work(
        settings,
        lambda work: set_actor_role(work=work, name=args.name, role=Role(args.role)),
    )
    name, role = change.actor.name, Role(change.actor.role)
    if change.before == role:
        print(f"{name} is {role_phrase(role)} already; nothing was changed.")
    else:
        print(f"{name} is now {role_phrase(role)} (was {role_phrase(change.before)}).")


def _actor_link_slack(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.reach.slack_actions import link_slack_user

    linked = _in_work(
        settings,
        lambda work: link_slack_user(work=work, name=args.name, slack_user_id=args.slack_user),
    )
    print(f"Slack user {linked.actor.slack_user_id} now decides as {linked.actor.name}.")


def _actor_disable(args: argparse.Namespace, settings: Settings) -> None:
    _actor_switch(args, settings, disable=True)


def _actor_enable(args: argparse.Namespace, settings: Settings) -> None:
    _actor_switch(args, settings, disable=False)


def _actor_switch(args: argparse.Namespace, settings: Settings, *, disable: bool) -> None:
    from signoff.resolvers.access.actors import disable_actor, enable_actor

    switch = disable_actor if disable else enable_actor
    switched = _in_work(settings, lambda work: switch(work=work, name=args.name))
    name, state = switched.actor.name, "disabled" if disable else "enabled"
    if not switched.changed:
        print(f"{name} is {state} already; nothing was changed.")
    elif disable:
        print(f"{name} is now disabled; its tokens are refused until it is enabled.")
    else:
        print(f"{name} is now enabled; its tokens work again.")


def _actor_link(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.access.persons import link_actor

    linked = _in_work(
        settings,
        lambda work: link_actor(
            work=work, name=args.name, to=args.to, issuer=args.issuer, subject=args.subject
        ),
    )
    print(f"{linked.actor.name} is now one person with: {', '.join(linked.actors)}.")
    if linked.recounted:
        print(f"Recounted the approvals of {len(linked.recounted)} waiting proposal(s).")


def _actor_unlink(args: argparse.Namespace, settings: Settings) -> None:
    from signoff.resolvers.access.persons import unlink_actor

    actor = _in_work(settings, lambda work: unlink_actor(work=work, name=args.name))
    print(f"{actor.name} now stands for itself alone.")


def _warn_unlinked(settings: Settings) -> None:
    """With sign-in on, a person's old token actor and their sign-in would be two votes
    unless linked: name the token actors linked to no one."""
    from signoff.resolvers.access.persons import unlinked_token_people

    if settings.oidc is None:
        return
    names = _in_work(settings, lambda work: unlinked_token_people(work.session))
    if names:
        logging.getLogger("signoff.cli").warning(
            "SIGNOFF_OIDC_ISSUER is set, and these reviewers, operators or admins use tokens "
            "but are linked to no sign-in: %s. Someone who also signs in would have two "
            "votes; link each with `signoff actor link --name NAME --to SIGNED-IN-NAME` (or "
            "--issuer and --subject), or revoke their tokens.",
            ", ".join(names),
        )


# Commands that never open the database.
_NO_DATABASE: frozenset[Callable[[argparse.Namespace, Settings], None]] = frozenset(
    {_schema, _receiver, _mcp}
)
