"""API speed: Signoff's GraphQL API against a plain floor and Strawberry's ceiling, in one run.

One PostgreSQL database is seeded with ``--proposals`` proposals (default 60,000: the
decide runs use up about 54,000 with the other defaults) in
``--queues`` queues (default 20), each HUMAN with three approvals required, one already
given and an open approval task. Three servers, each one process on 127.0.0.1, run side
by side and answer the same operations:

- **Signoff**: ``signoff serve`` on that database (in-process worker and hub, log level
  warning);
- **log off**: the same with the verifiable audit log off (``SIGNOFF_AUDIT_LOG=0``), on a
  copy of that database, for ``propose`` and ``decide`` only: what the log costs;
- **floor** (``bench/api_floor.py``): a plain Starlette endpoint per operation making the
  same database round trips with psycopg and encoding a JSON document of the same shape;
- **ceiling** (``bench/api_ceiling.py``): Strawberry answering the same query documents
  from memory with types of the same shape (no database, no authentication).

Operations: ``hello`` (``{ viewer { queueIds } }``; the floor is a JSON hello behind the
same token lookup), ``page`` (``proposals(first: 20)`` with target, approvals, approvers
and task), ``one`` (``proposal(id:)``, the same selection), ``propose``
(``proposeAction``, a new operation key per request) and ``decide`` (``decideProposal``
APPROVED on a proposal nobody of this reviewer decided yet). Each is driven by ``wrk``
(one thread, ``--duration`` seconds, a fresh connection pool per run) at 1, 10 and 50
connections, ``--rounds`` times per side (default 3), the sides taking turns in a
rotating order so that each meets the same drift of the machine's speed; a side's
figures are those of its median round. A request answering anything but 200 without
``errors`` is counted as failed. Each run also reads the server's CPU time (Linux's
/proc) and reports CPU per request for Signoff and the floor, steadier than req/s on a
shared machine (Signoff's includes its relay's work meanwhile). SQL statements per request
come from ``/metrics`` (Signoff: everything the process sent, its relay included) and
``/stats`` (floor), over 50 sequential requests, less what the server sent by itself in
as long with no request (the upkeep's ticks and the worker's sweeps).

``--operations propose decide`` measures only those two (the log's cost, in a few
minutes); ``--operations hello page one --connections 10`` only the reads (issue 46's
goal 3), which need no more than a few thousand ``--proposals``. Needs ``wrk`` (Debian:
``apt-get install wrk``).

    python bench/api.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from delivery import free_port, fresh_database
from sqlalchemy import insert
from sqlalchemy.engine import make_url
from sqlmodel import select

from signoff.config import Settings, load_sealer, parse_networks
from signoff.database import create_engine, create_sessionmaker
from signoff.migrate import migrate
from signoff.models import Approval, ApprovalMode, Decision, HumanTask, Proposal, Role
from signoff.models.actor import person_of
from signoff.models.base import new_id
from signoff.models.proposal import payload_digest_of
from signoff.resolvers.access.actors import authenticate, create_token
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.proposals import propose_action
from signoff.resolvers.approval.queues import create_queue
from signoff.resolvers.core.work import Services, WorkMaker
from signoff.resolvers.targets.targets import register_target

BENCH = Path(__file__).parent
HOST = "127.0.0.1"
SELECTION = """id state actionCode subject payload payloadDigest requiredApprovals
approvalCount expiresAt createdAt target { id name approvalMode }
approvals { id decision payloadDigest createdAt approver { id name } }
task { id state priority }"""
HELLO = "{ viewer { queueIds } }"
PAGE = (
    "query Page { proposals(first: 20) { edges { cursor node { "
    + SELECTION
    + " } } pageInfo { hasNextPage endCursor } } }"
)
ONE = "query One($id: ID!) { proposal(id: $id) { " + SELECTION + " } }"
PROPOSE = """mutation Propose($input: ProposeActionInput!) { proposeAction(input: $input) {
replayed proposal { id state payloadDigest expiresAt } task { id state } } }"""
DECIDE = """mutation Decide($input: DecideProposalInput!) { decideProposal(input: $input) {
proposal { state approvalCount } approval { decision approver { name } } task { state } } }"""
OPERATIONS = ["hello", "page", "one", "propose", "decide"]
QUERIES = {"hello", "page", "one"}
WRITES = ["propose", "decide"]
# The sides that are Signoff, counting statements from /metrics.
SIGNOFF_SIDES = {"Signoff", "log off"}
STATEMENT_SAMPLE = 50

LUA = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
local kind, path, prefix = "{kind}", "{path}", "{prefix}"
local static = [==[{static}]==]
local head, tail = [==[{head}]==], [==[{tail}]==]
local lines, counter = {{}}, 0
errors = 0
init = function(args)
  if kind == "lines" then
    for line in io.lines("{lines}") do table.insert(lines, line) end
  end
end
request = function()
  counter = counter + 1
  local body = static
  if kind == "counter" then
    body = head .. prefix .. "-" .. counter .. tail
  elseif kind == "lines" then
    body = lines[((counter - 1) % #lines) + 1]
  end
  return wrk.format(nil, path, nil, body)
end
response = function(status, headers, body)
  if status ~= 200 or string.find(body, '"errors"', 1, true) then
    errors = errors + 1
  end
end
local threads = {{}}
setup = function(thread) table.insert(threads, thread) end
done = function(summary, latency, requests)
  local total = 0
  for _, t in ipairs(threads) do total = total + t:get("errors") end
  io.write(string.format("failed %d\\n", total))
end
"""

# The bench's targets and receivers are on loopback, which deliveries reach only if allowed.
LOOPBACK_TEXT = "127.0.0.0/8,::1/128"
LOOPBACK = parse_networks("SIGNOFF_DELIVERY_ALLOW_NETWORKS", LOOPBACK_TEXT)


@dataclass(frozen=True)
class World:
    agent: str
    reviewer: str
    target_id: str
    proposal_id: str
    # (id, digest) of proposals the reviewer may still decide: Signoff's half, the floor's.
    undecided: tuple[list[tuple[str, str]], list[tuple[str, str]]]


@dataclass(frozen=True)
class Figures:
    rps: float
    p50_ms: float
    p99_ms: float
    requests: int
    failed: int
    # The server's CPU time per request (None where /proc does not tell): steadier than
    # req/s on a machine shared with other work.
    cpu_ms: float | None = None


def cpu_seconds(pid: int) -> float | None:
    """User and system CPU time of process ``pid`` so far (Linux's /proc)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def seed(url: str, proposals: int, queues: int) -> World:
    """Queues, targets, tokens and ``proposals`` proposals: one per queue through the
    resolvers, the rest copied from those with their own ids, digests, tasks and a first
    approval, inserted in bulk."""
    engine = create_engine(url)
    await migrate(engine)
    settings = Settings(database_url=url, delivery_allow_networks=LOOPBACK)
    work = WorkMaker(
        create_sessionmaker(engine),
        Services(sealer=load_sealer(settings), destinations=settings.destinations),
    )
    slugs = [f"bench-{i}" for i in range(queues)]
    admin = await _viewer(work, Role.ADMIN, "bench-admin", [])
    templates: list[Proposal] = []
    agent_token = await _token(work, Role.AGENT, "bench-agent", [])
    agent = await _authenticated(work, agent_token)
    targets: list[str] = []
    for slug in slugs:
        async with work() as unit:
            queue = await create_queue(work=unit, viewer=admin, slug=slug, name=slug)
        async with work() as unit:
            registered = await register_target(
                work=unit,
                viewer=admin,
                name=slug,
                url="http://127.0.0.1:9/hook",
                input_schema={"type": "object"},
                approval_mode=ApprovalMode.HUMAN,
                queue_id=queue.id,
                required_approvals=3,
            )
        targets.append(registered.target.id)
    reviewer = await _token(work, Role.REVIEWER, "bench-reviewer", slugs)
    second = await _viewer(work, Role.REVIEWER, "bench-reviewer-b", slugs)
    for i, target_id in enumerate(targets):
        async with work() as unit:
            made = await propose_action(
                work=unit,
                viewer=agent,
                target_id=target_id,
                action_code="bench.run",
                operation_key=f"template-{i}",
                payload={"amount": 1200 + i, "currency": "EUR", "note": "bench"},
                subject={"order": f"o-{i}"},
            )
        templates.append(made.proposal)
    undecided = await _copies(engine, templates, proposals - len(templates), second.id)
    await engine.dispose()
    half = len(undecided) // 2
    return World(
        agent=agent_token,
        reviewer=reviewer,
        target_id=targets[0],
        proposal_id=undecided[0][0],
        undecided=(undecided[:half], undecided[half:]),
    )


async def _copies(
    engine: Any, templates: list[Proposal], n: int, approver_id: str
) -> list[tuple[str, str]]:
    proposals, tasks, approvals = [], [], []
    made: list[tuple[str, str]] = []
    async with create_sessionmaker(engine)() as session:
        template_tasks = {t.proposal_id: t for t in (await session.exec(select(HumanTask))).all()}
    for i in range(n):
        template = templates[i % len(templates)]
        copy = Proposal.model_validate(
            template.model_dump()
            | {
                "id": new_id(),
                "operation_key": f"copy-{i}",
                "approval_count": 1,
                # Newer than the templates: the first page shows copies, with an approval.
                "created_at": template.created_at + timedelta(milliseconds=i + 1),
            }
        )
        copy.payload_digest = payload_digest_of(copy)
        proposals.append(copy.model_dump())
        task = template_tasks[template.id]
        tasks.append(task.model_dump(warnings=False) | {"id": new_id(), "proposal_id": copy.id})
        approvals.append(
            Approval(
                proposal_id=copy.id,
                approver_id=approver_id,
                person=person_of(approver_id, None),
                decision=Decision.APPROVED,
                payload_digest=copy.payload_digest,
                created_at=copy.created_at,
            ).model_dump()
        )
        made.append((copy.id, copy.payload_digest))
    async with engine.begin() as conn:
        for table, rows in ((Proposal, proposals), (HumanTask, tasks), (Approval, approvals)):
            for start in range(0, len(rows), 1000):
                await conn.execute(insert(table), rows[start : start + 1000])
    return made


async def _token(work: WorkMaker, role: Role, name: str, queues: list[str]) -> str:
    async with work() as unit:
        return (await create_token(work=unit, name=name, role=role, queue_slugs=queues)).token


async def _authenticated(work: WorkMaker, token: str) -> Viewer:
    async with work() as unit:
        return await authenticate(session=unit.session, token=token)


async def _viewer(work: WorkMaker, role: Role, name: str, queues: list[str]) -> Viewer:
    return await _authenticated(work, await _token(work, role, name, queues))


@dataclass(frozen=True)
class Side:
    """One server under test and how each operation is asked of it."""

    name: str
    command: list[str]
    env: dict[str, str]
    paths: dict[str, str]
    operations: list[str]

    def start(self, port: int) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [*self.command, "--port", str(port)], env={**os.environ, **self.env}
        )


def sides(database_url: str, copy_url: str) -> list[Side]:
    graphql = dict.fromkeys(OPERATIONS, "/graphql")
    serve = [sys.executable, "-m", "signoff", "serve", "--host", HOST]
    env = {
        "SIGNOFF_LOG_LEVEL": "warning",
        # wrk sends every request with one token: measure, not the rate limit.
        "SIGNOFF_RATE_LIMIT": "0",
        # The seeded targets point at loopback, as before deliveries were confined.
        "SIGNOFF_DELIVERY_ALLOW_NETWORKS": LOOPBACK_TEXT,
    }
    return [
        Side("Signoff", serve, {**env, "SIGNOFF_DATABASE_URL": database_url}, graphql, OPERATIONS),
        Side(
            "log off",
            serve,
            # Its own copy: a server with the log on would otherwise stamp its records.
            {**env, "SIGNOFF_DATABASE_URL": copy_url, "SIGNOFF_AUDIT_LOG": "0"},
            graphql,
            WRITES,
        ),
        Side(
            "floor",
            [sys.executable, str(BENCH / "api_floor.py"), "--database-url", libpq(database_url)],
            {},
            {op: f"/{op}" for op in OPERATIONS},
            OPERATIONS,
        ),
        Side(
            "ceiling",
            [sys.executable, str(BENCH / "api_ceiling.py")],
            {},
            graphql,
            [op for op in OPERATIONS if op in QUERIES],
        ),
    ]


def libpq(url: str) -> str:
    """The URL without SQLAlchemy's driver name, as psycopg takes it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def body(operation: str, world: World, operation_key: str = "") -> dict[str, Any]:
    """The JSON body of one request (``propose`` and ``decide`` vary per request)."""
    if operation == "hello":
        return {"query": HELLO}
    if operation == "page":
        return {"query": PAGE}
    if operation == "one":
        return {"query": ONE, "variables": {"id": world.proposal_id}}
    if operation == "propose":
        given = {
            "targetId": world.target_id,
            "actionCode": "bench.run",
            "subject": {"order": "o-1"},
            "payload": {"amount": 1200, "currency": "EUR", "note": "bench"},
            "operationKey": operation_key,
        }
        return {"query": PROPOSE, "variables": {"input": given}}
    raise ValueError(operation)


def decide_body(proposal_id: str, digest: str) -> dict[str, Any]:
    given = {"proposalId": proposal_id, "decision": "APPROVED", "payloadDigest": digest}
    return {"query": DECIDE, "variables": {"input": given}}


class Decisions:
    """Hands out proposals not yet decided, so no request repeats another's decision."""

    def __init__(self, undecided: list[tuple[str, str]]) -> None:
        self.undecided = list(undecided)

    def take(self, n: int) -> list[tuple[str, str]]:
        taken, self.undecided = self.undecided[:n], self.undecided[n:]
        if len(taken) < n:
            raise RuntimeError("out of undecided proposals: seed more with --proposals")
        return taken


def lua(
    folder: Path, side: Side, operation: str, world: World, token: str, lines: Path | None
) -> Path:
    """The wrk script for one run."""
    prefix = f"{side.name}-{operation}-{time.monotonic_ns()}"
    static, head, tail, kind = "", "", "", "static"
    if operation == "propose":
        marker = "@@KEY@@"
        head, tail = json.dumps(body("propose", world, marker)).split(marker)
        kind = "counter"
    elif operation == "decide":
        kind = "lines"
    else:
        static = json.dumps(body(operation, world))
    script = folder / f"{prefix}.lua"
    script.write_text(
        LUA.format(
            token=token,
            kind=kind,
            path=side.paths[operation],
            prefix=prefix,
            static=static,
            head=head,
            tail=tail,
            lines=lines or "",
        )
    )
    return script


def wrk(base: str, script: Path, connections: int, duration: int) -> Figures:
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{duration}s",
            "--latency",
            "--timeout",
            "30s",
            "-s",
            str(script),
            base,
        ],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"wrk failed: {out.stderr or out.stdout}")
    return _figures(out.stdout)


def _figures(out: str) -> Figures:
    return Figures(
        rps=float(_find(r"Requests/sec:\s+([\d.]+)", out)),
        p50_ms=_ms(_find(r"\s50%\s+([\d.]+\w+)", out)),
        p99_ms=_ms(_find(r"\s99%\s+([\d.]+\w+)", out)),
        requests=int(_find(r"(\d+) requests in", out)),
        failed=int(_find(r"failed (\d+)", out)),
    )


def _find(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    if found is None:
        raise RuntimeError(f"wrk printed no {pattern!r}:\n{text}")
    return found.group(1)


def _ms(value: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def wait_ready(base: str, server: subprocess.Popen[bytes], path: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with {server.returncode}")
        try:
            httpx.post(base + path, json={"query": HELLO}, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError("the server did not start within 60 s")


def statements(base: str, side: Side) -> float | None:
    """Statements the server has sent so far (None where it cannot tell)."""
    if side.name in SIGNOFF_SIDES:
        text = httpx.get(base + "/metrics").text
        found = re.search(r"^signoff_sql_statements_total ([\d.e+]+)$", text, re.MULTILINE)
        if found is None:
            raise RuntimeError("/metrics has no signoff_sql_statements_total")
        return float(found.group(1))
    if side.name == "floor":
        return float(httpx.get(base + "/stats").json()["statements"])
    return None


def statements_per_request(
    base: str, side: Side, operation: str, world: World, token: str, decisions: Decisions
) -> float | None:
    # A scrape of Signoff's /metrics reads the database itself: what one costs is taken off.
    first = statements(base, side)
    if first is None:
        return None
    before = statements(base, side)
    assert before is not None
    scrape = before - first
    headers = {"Authorization": f"Bearer {token}"}
    started = time.monotonic()
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        for i in range(STATEMENT_SAMPLE):
            if operation == "decide":
                ((proposal_id, digest),) = decisions.take(1)
                sent = decide_body(proposal_id, digest)
            else:
                sent = body(operation, world, f"{side.name}-sample-{i}")
            answered = http.post(side.paths[operation], json=sent).json()
            if "errors" in answered:
                raise RuntimeError(f"{side.name} {operation}: {answered['errors']}")
    after = statements(base, side)
    assert after is not None
    background = idle(base, side, time.monotonic() - started, scrape)
    return (after - before - scrape - background) / STATEMENT_SAMPLE


def idle(base: str, side: Side, seconds: float, scrape: float) -> float:
    """What the server sends by itself in ``seconds`` with no request (Signoff's upkeep ticks
    and worker sweeps, at their own pace; ``scrape``: what one look at /metrics costs): taken
    off the sample, which would otherwise count more of them per request the slower the
    machine answers."""
    first = statements(base, side)
    assert first is not None
    time.sleep(seconds)
    last = statements(base, side)
    assert last is not None
    return max(0.0, last - first - scrape)


@dataclass
class Running:
    """A side's server, up for the whole measurement."""

    side: Side
    server: subprocess.Popen[bytes]
    base: str
    decisions: Decisions

    def stop(self) -> None:
        self.server.terminate()
        try:
            self.server.wait(10)
        except subprocess.TimeoutExpired:
            self.server.kill()


def start_sides(url: str, copy_url: str, world: World) -> list[Running]:
    running = []
    try:
        for side in sides(url, copy_url):
            port = free_port()
            base = f"http://{HOST}:{port}"
            # Signoff and the floor share a database, so each decides its own half; the log
            # off side has a copy of its own.
            decisions = Decisions(world.undecided[side.name == "floor"])
            running.append(Running(side, side.start(port), base, decisions))
        for each in running:
            wait_ready(each.base, each.server, each.side.paths["hello"])
    except BaseException:
        for each in running:
            each.stop()
        raise
    return running


def measure(
    running: list[Running], world: World, args: argparse.Namespace, folder: Path
) -> dict[str, dict[tuple[str, int], Any]]:
    """Every operation at every concurrency, ``--rounds`` times per side, the sides in
    turn and in a rotating order: the machine's speed drifts by more than the
    differences measured, so each side meets the same drift. A side's figures are
    those of its median round (by req/s)."""
    results: dict[str, dict[tuple[str, int], Any]] = {r.side.name: {} for r in running}
    for operation in args.operations:
        taking = [r for r in running if operation in r.side.operations]
        token = world.agent if operation == "propose" else world.reviewer
        for each in taking:
            results[each.side.name][(operation, 0)] = statements_per_request(
                each.base, each.side, operation, world, token, each.decisions
            )
        for connections in args.connections:
            rounds: dict[str, list[Figures]] = {r.side.name: [] for r in taking}
            for round_index in range(args.rounds):
                shift = round_index % len(taking)
                for each in taking[shift:] + taking[:shift]:
                    figures = run_once(each, operation, connections, world, token, args, folder)
                    rounds[each.side.name].append(figures)
            for name, figures_of_rounds in rounds.items():
                results[name][(operation, connections)] = median_round(figures_of_rounds)
    return results


def run_once(
    each: Running,
    operation: str,
    connections: int,
    world: World,
    token: str,
    args: argparse.Namespace,
    folder: Path,
) -> Figures:
    lines = None
    if operation == "decide":
        lines = folder / f"{each.side.name}-{connections}-{time.monotonic_ns()}.jsonl"
        wanted = int(args.decide_budget * connections**0.5)
        lines.write_text(
            "\n".join(json.dumps(decide_body(*d)) for d in each.decisions.take(wanted))
        )
    script = lua(folder, each.side, operation, world, token, lines)
    before = cpu_seconds(each.server.pid)
    figures = wrk(each.base, script, connections, args.duration)
    after = cpu_seconds(each.server.pid)
    if before is not None and after is not None and figures.requests:
        figures = replace(figures, cpu_ms=1000 * (after - before) / figures.requests)
    cpu = "" if figures.cpu_ms is None else f"  CPU {figures.cpu_ms:.2f} ms/req"
    print(
        f"  {each.side.name:8} {operation:8} c={connections:<3} {figures.rps:9,.1f} req/s"
        f"  p50 {figures.p50_ms:8.2f} ms  p99 {figures.p99_ms:8.2f} ms"
        f"  failed {figures.failed}{cpu}",
        flush=True,
    )
    return figures


def median_round(rounds: list[Figures]) -> Figures:
    """The round of median req/s (the lower middle one of an even number), with the
    failures of every round."""
    ordered = sorted(rounds, key=lambda f: f.rps)
    middle = ordered[(len(ordered) - 1) // 2]
    return replace(middle, failed=sum(f.failed for f in rounds))


def report(all_results: dict[str, dict[tuple[str, int], Any]], args: argparse.Namespace) -> None:
    signoff, floor, ceiling = (all_results[n] for n in ("Signoff", "floor", "ceiling"))
    log_off = all_results["log off"]
    print()
    print(
        f"{args.proposals:,} proposals in {args.queues} queues, PostgreSQL; wrk, 1 thread, "
        f"{args.duration:g} s per run; machine: {platform.platform()}, {os.cpu_count()} cores"
    )
    print()
    print(
        "| operation | clients | Signoff req/s | p50 / p99 ms | floor req/s | p50 / p99 ms "
        "| ceiling req/s | vs floor | vs ceiling |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for operation in args.operations:
        for c in args.connections:
            ours, plain = signoff[(operation, c)], floor[(operation, c)]
            top = ceiling.get((operation, c))
            print(
                f"| {operation} | {c} | {ours.rps:,.0f} | {ours.p50_ms:.1f} / {ours.p99_ms:.1f} "
                f"| {plain.rps:,.0f} | {plain.p50_ms:.1f} / {plain.p99_ms:.1f} "
                f"| {f'{top.rps:,.0f}' if top else '—'} | {ours.rps / plain.rps:.3f}x "
                f"| {f'{ours.rps / top.rps:.2f}x' if top else '—'} |"
            )
    failed = {
        f"{name} {op} c={c}": f.failed
        for name, results in all_results.items()
        for (op, c), f in results.items()
        if c and f.failed
    }
    print()
    print(f"failed requests: {failed or 'none'}")
    report_cpu(signoff, floor, args)
    print()
    print("| operation | SQL statements per request: Signoff | floor |")
    print("| --- | --- | --- |")
    for operation in args.operations:
        print(f"| {operation} | {signoff[(operation, 0)]:.1f} | {floor[(operation, 0)]:.1f} |")
    if any(op in WRITES for op in args.operations):
        report_log_cost(signoff, log_off, args)


def report_cpu(
    signoff: dict[tuple[str, int], Any], floor: dict[tuple[str, int], Any], args: argparse.Namespace
) -> None:
    """Server CPU per request, Signoff against the floor: the floor's share of Signoff's CPU
    is what its req/s ratio would be were each server CPU-bound on a core of its own."""
    print()
    print("| operation | clients | Signoff CPU ms/req | floor CPU ms/req | floor / Signoff |")
    print("| --- | --- | --- | --- | --- |")
    for operation in args.operations:
        for c in args.connections:
            ours, plain = signoff[(operation, c)].cpu_ms, floor[(operation, c)].cpu_ms
            if ours is None or plain is None:
                continue
            print(f"| {operation} | {c} | {ours:.2f} | {plain:.2f} | {plain / ours:.3f}x |")


def report_log_cost(
    on: dict[tuple[str, int], Any], off: dict[tuple[str, int], Any], args: argparse.Namespace
) -> None:
    """What the verifiable audit log costs: Signoff's writes with it on and off."""
    print()
    print(
        "| operation | clients | log on req/s | p50 / p99 ms | log off req/s | p50 / p99 ms "
        "| the log costs |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for operation in (op for op in args.operations if op in WRITES):
        for c in args.connections:
            with_log, without = on[(operation, c)], off[(operation, c)]
            print(
                f"| {operation} | {c} | {with_log.rps:,.0f} "
                f"| {with_log.p50_ms:.1f} / {with_log.p99_ms:.1f} | {without.rps:,.0f} "
                f"| {without.p50_ms:.1f} / {without.p99_ms:.1f} "
                f"| {1 - with_log.rps / without.rps:+.1%} |"
            )
    print()
    for operation in (op for op in args.operations if op in WRITES):
        print(
            f"{operation}: {on[(operation, 0)]:.1f} SQL statements per request with the log, "
            f"{off[(operation, 0)]:.1f} without"
        )


def settle(url: str) -> None:
    """Vacuum and analyze the seeded database: otherwise autovacuum wakes while the first
    side (Signoff) is measured, and its first plans are made without statistics."""
    with psycopg.connect(libpq(url), autocommit=True) as connection:
        connection.execute("VACUUM ANALYZE")


async def prepare(args: argparse.Namespace, url: str) -> World:
    started = time.monotonic()
    world = await seed(url, args.proposals, args.queues)
    settle(url)
    print(f"seeded {args.proposals:,} proposals in {time.monotonic() - started:.1f} s", flush=True)
    return world


def decisions_needed(args: argparse.Namespace) -> int:
    """Undecided proposals the decide runs use up: the two sides that decide, each taking
    its sample and every round's decisions (none when ``decide`` is not measured)."""
    if "decide" not in args.operations:
        return 0
    per_round = sum(int(args.decide_budget * c**0.5) for c in args.connections)
    rounds: int = args.rounds
    return 2 * (STATEMENT_SAMPLE + rounds * per_round)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url", required=True, help="a PostgreSQL server")
    parser.add_argument("--proposals", type=int, default=60_000)
    parser.add_argument("--queues", type=int, default=20)
    parser.add_argument("--duration", type=int, default=5, help="seconds per run")
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs per side of each operation and concurrency"
    )
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument(
        "--operations", nargs="+", choices=OPERATIONS, default=OPERATIONS, help="what to measure"
    )
    parser.add_argument(
        "--decide-budget",
        type=int,
        # Enough for 150 decisions/s at one client for 5 s: a run that ran out would
        # decide some proposals twice and count those as failed.
        default=800,
        help="decisions prepared per decide run, times the square root of its connections",
    )
    args = parser.parse_args()
    needed = decisions_needed(args)
    if args.proposals - args.queues < needed:
        sys.exit(
            f"the decide runs need {needed:,} undecided proposals: pass --proposals "
            f"{needed + args.queues:,} or more, or fewer --rounds or a smaller --decide-budget"
        )
    if shutil.which("wrk") is None:
        sys.exit("bench/api.py needs wrk (Debian: apt-get install wrk)")

    asyncio.run(run(args))


async def run(args: argparse.Namespace) -> None:
    """Seed, then measure the sides in turn (blocking calls: nothing else runs meanwhile)."""
    async with fresh_database(args.database_url) as url:
        world = await prepare(args, url)
        async with fresh_database(args.database_url, template=make_url(url).database) as copy_url:
            running = start_sides(url, copy_url, world)
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    all_results = measure(running, world, args, Path(tmp))
            finally:
                for each in running:
                    each.stop()
        report(all_results, args)


if __name__ == "__main__":
    main()
