"""The README's and the documentation site's GraphQL examples, run exactly as printed
against a real ``signoff serve``.

The fenced ``graphql`` blocks are read when the test runs, in order, from the pages they
are printed on: README.md (the worked example, which the site's "Getting started"
includes as it is), then the site's pages in ``IN_ORDER``; every page of the site that
prints a ``graphql`` block must be one of them. Only the placeholders in angle brackets
(``"<the queue id>"``, ...) are replaced, with the values earlier answers gave, and the
receivers' fixed ports with free ones; tokens are made with ``signoff token create`` as
the examples say. The two worked examples (in GraphiQL, then from a shell, on the
Delivery page: ``tests/readme_shell.py``) run one after the other on one database, as a
newcomer runs them, and "Deciding better" continues the first on the same database with
the same tokens. Each block says above it whose token it needs ("As alice
(reviewer):"), and is sent with a token of that role. The "Watch a queue" subscription
(Live events) is sent over graphql-transport-ws as its exact text (comments included)
with alice's token, the way GraphiQL sends it, while the worked example's mutations run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import graphql
import httpx
from redis.asyncio import Redis
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from signoff.config import parse_networks
from signoff.database import SessionMaker
from signoff.models import Role
from tests.conftest import REDIS_URL, requires_postgres, requires_redis
from tests.helpers import GraphQLClient, World, build_world
from tests.jobs.test_crash import Workers
from tests.jobs.test_delivery import approved, read
from tests.jobs.test_runners import arq_settings
from tests.live import (
    Server,
    feed_published,
    http_gql,
    open_transport_ws,
    server_log_on_failure,
)
from tests.processes import ROOT, free_port, signoff_env
from tests.readme_shell import (
    Shell,
    commands,
    page,
    page_section,
    printed,
    serve_settings,
    sh_blocks,
)
from tests.receivers import Answer, Receiver
from tests.receivers import serve as serve_receiver
from tests.redis_keys import unique_queue
from tests.schema.test_target_circuit import open_circuit
from tests.test_server import new_token
from tools.copy_docs import COPY

ALLOW = "SIGNOFF_DELIVERY_ALLOW_NETWORKS"

Serve = Callable[..., Awaitable[Server]]

README = ROOT / "README.md"
DOCS = ROOT / "docs"
# A fence may be indented (inside a list item); its body carries the same indent.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```graphql[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S
)
PLACEHOLDER = re.compile(r'"<(?P<name>[^"<>]+)>"')
# The line above each block: whose token it needs.
AS = re.compile(r"^As (?P<name>[\w-]+) \((?P<role>agent|reviewer|operator|integration|admin)\):$")

# The pages that print GraphQL examples, in the order a reader meets them, and each page's
# blocks by their root field, in the order it prints them; ``root#n`` is the n-th block
# selecting that field, counted across the pages.
IN_ORDER = {
    "README.md": [
        "createQueue",
        "registerTarget",
        "proposeAction",
        "tasks",
        "claimTask",
        "decideProposal",
        "auditEvents",
    ],
    "docs/reviewing.md": [
        "simulatePolicy",
        "proposeAction#2",
        "amendProposal",
        "bulkDecisionPreview",
        "decideProposals",
    ],
    "docs/live-events.md": ["queueEvents"],
    "docs/queue-owners.md": [
        "createQueue#2",
        "registerTarget#2",
        "proposeAction#3",
        "proposal",
        "queueStats",
        "addNotificationChannel",
        "disableNotificationChannel",
        "removeNotificationChannel",
        "actors",
        "createApprovalLink",
        "addNotificationChannel#2",
    ],
    "docs/operating.md": [
        "operationsSnapshot",
        "operationsStatistics",
        "incidents",
        "acknowledgeIncident",
        "retryIncident",
        "resolveIncident",
        "pauseTarget",
        "resumeTarget",
        "setTargetLimits",
        "targets",
        "closeTargetCircuit",
    ],
}
EXAMPLE_PAGES = list(IN_ORDER)

# Every request must answer within a few seconds: the SQLite busy timeout is 30 s, and a
# request that waits on a lock held elsewhere takes that long, then fails.
ANSWER_WITHIN = 5.0
GIVE_UP_AFTER = 12.0  # the client's own timeout: fail fast instead of waiting out 30 s
EVENTS_WITHIN = 10.0

PAYLOAD = {"amount": 1200, "currency": "EUR"}
PROPOSAL_STATE = """query($id: ID!) {
  proposal(id: $id) { state deliveryTerminal lastErrorCode } }"""
VIEWER_ROLE = "query { viewer { actor { role } } }"


@dataclass(frozen=True)
class Block:
    page: str  # README.md or docs/NAME.md: where it is printed
    text: str
    operation: str  # query, mutation or subscription
    root: str  # the first root field it selects
    key: str  # ``root``, or ``root#n`` for the n-th block selecting the same field
    role: str  # whose token it needs, as the line above it says


def readme_blocks() -> list[Block]:
    """Every ``graphql`` block of ``EXAMPLE_PAGES``, page after page, as printed."""
    blocks: list[Block] = []
    for name in EXAMPLE_PAGES:
        blocks.extend(page_blocks(name, blocks))
    return blocks


def page_blocks(name: str, before: list[Block]) -> list[Block]:
    """The page's ``graphql`` blocks, keyed after the ``before`` blocks of earlier pages."""
    blocks: list[Block] = []
    text = page(name)
    for match in FENCE.finditer(text):
        indent = match["indent"]
        above = [line.strip() for line in text[: match.start()].splitlines() if line.strip()]
        says = AS.match(above[-1])
        assert says, f"{name}: no 'As name (role):' line above the block:\n{match[0]}"
        lines = match["body"].splitlines()
        assert all(line.startswith(indent) or not line.strip() for line in lines), match[0]
        body = "\n".join(line[len(indent) :] for line in lines) + "\n"
        document = graphql.parse(body)  # the block is valid GraphQL as printed
        definition = document.definitions[0]
        assert isinstance(definition, graphql.OperationDefinitionNode)
        selection = definition.selection_set.selections[0]
        assert isinstance(selection, graphql.FieldNode)
        root = selection.name.value
        seen = sum(block.root == root for block in [*before, *blocks])
        key = root if not seen else f"{root}#{seen + 1}"
        blocks.append(Block(name, body, definition.operation.value, root, key, says["role"]))
    return blocks


def fill(block: Block, values: dict[str, str]) -> str:
    """The block with each ``"<placeholder>"`` replaced by the value an earlier answer gave."""

    def value(match: re.Match[str]) -> str:
        name = match["name"]
        assert name in values, f"{block.root}: no earlier answer gave <{name}>"
        return json.dumps(values[name])

    return PLACEHOLDER.sub(value, block.text)


@dataclass
class Readme:
    """Runs the README's and the site's blocks against one server, timing every answer."""

    server: Server
    http: httpx.AsyncClient
    blocks: dict[str, Block] = field(default_factory=dict)
    values: dict[str, str] = field(default_factory=dict)
    ports: dict[int, int] = field(default_factory=dict)  # printed in the examples: free
    roles: dict[str, str] = field(default_factory=dict)  # token: its actor's role

    @classmethod
    @contextlib.asynccontextmanager
    async def against(cls, server: Server) -> AsyncIterator[Readme]:
        blocks = readme_blocks()
        found = {name: [b.key for b in blocks if b.page == name] for name in EXAMPLE_PAGES}
        assert found == IN_ORDER, "the graphql blocks of the README or the site changed"
        async with httpx.AsyncClient(base_url=server.url, timeout=GIVE_UP_AFTER) as http:
            with server_log_on_failure(server):
                yield cls(server, http, {b.key: b for b in blocks})

    async def run(self, key: str, token: str) -> Any:
        """Send block ``key`` as printed (placeholders filled); return its field's answer."""
        block = self.blocks[key]
        root = block.root
        assert block.operation in ("query", "mutation")
        assert await self.role_of(token) == block.role, f"{key} says it is sent as a {block.role}"
        started = time.monotonic()
        try:
            response = await self.http.post(
                "/graphql",
                json={"query": self.filled(block)},
                headers={"Authorization": f"Bearer {token}"},
            )
        except httpx.TimeoutException:
            raise AssertionError(f"{root} did not answer within {GIVE_UP_AFTER} s") from None
        elapsed = time.monotonic() - started
        assert response.status_code == 200, f"{root}: HTTP {response.status_code} {response.text}"
        body = response.json()
        if body.get("errors"):
            raise AssertionError(f"{root} answered after {elapsed:.1f} s: {body['errors']}")
        if elapsed >= ANSWER_WITHIN:
            raise AssertionError(f"{root} took {elapsed:.1f} s")
        data = body["data"]
        return data.get(root, data)  # a block of aliased fields: all of them

    async def role_of(self, token: str) -> str:
        if token not in self.roles:
            response = await self.http.post(
                "/graphql",
                json={"query": VIEWER_ROLE},
                headers={"Authorization": f"Bearer {token}"},
            )
            self.roles[token] = response.json()["data"]["viewer"]["actor"]["role"].lower()
        return self.roles[token]

    def filled(self, block: Block) -> str:
        text = fill(block, self.values)
        for printed_port, free in self.ports.items():
            text = text.replace(f"127.0.0.1:{printed_port}/", f"127.0.0.1:{free}/")
        return text

    async def applied(self, token: str, proposal_id: str) -> None:
        """Until the proposal is delivered and applied."""
        deadline = time.monotonic() + EVENTS_WITHIN
        state = None
        while time.monotonic() < deadline:
            response = await self.http.post(
                "/graphql",
                json={"query": PROPOSAL_STATE, "variables": {"id": proposal_id}},
                headers={"Authorization": f"Bearer {token}"},
            )
            state = response.json()["data"]["proposal"]
            if state["state"] == "APPLIED":
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"proposal {proposal_id} was not applied: {state}")

    async def ready(self) -> None:
        started = time.monotonic()
        try:
            response = await self.http.get("/readyz", timeout=ANSWER_WITHIN)
        except httpx.TimeoutException:
            raise AssertionError(f"/readyz did not answer within {ANSWER_WITHIN} s") from None
        elapsed = time.monotonic() - started
        assert response.status_code == 200, f"/readyz after {elapsed:.1f} s: {response.text}"
        assert response.json() == {"status": "ok", "database": "ok"}


async def token_create(database_url: str, *args: str) -> str:
    """``signoff token create ARGS``, as the README runs it; the token it prints."""
    return await asyncio.to_thread(new_token, signoff_env(database_url), *args)


async def create_queue_and_target(readme: Readme, ops: str) -> None:
    queue = await readme.run("createQueue", ops)
    assert queue["slug"] == "payments" and queue["id"]
    readme.values["the queue id"] = queue["id"]

    registered = await readme.run("registerTarget", ops)
    assert registered["target"]["name"] == "refunds" and registered["target"]["id"]
    assert registered["signingSecret"].startswith("whsec_")
    readme.values["the target id"] = registered["target"]["id"]
    readme.values["the signingSecret"] = registered["signingSecret"]


Settle = Callable[[str], Awaitable[None]]


async def nothing_to_settle(_: str) -> None:
    return None


async def propose_review_decide(
    readme: Readme, *, ops: str, agent: str, alice: str, settle: Settle = nothing_to_settle
) -> None:
    """The worked example from "Switch the header to the agent's token" on; ``settle(root)``
    runs after each mutation (a subscriber waits there for what it should have seen)."""
    first = await readme.run("proposeAction", agent)
    await settle("proposeAction")
    assert first["replayed"] is False
    proposal, task = first["proposal"], first["task"]
    assert proposal["state"] == "APPROVAL_REQUIRED"
    assert proposal["payloadDigest"] and proposal["expiresAt"] and proposal["id"]
    assert task["state"] == "OPEN" and task["id"]

    # "Run it twice: the second answer is the same proposal with replayed: true."
    second = await readme.run("proposeAction", agent)
    await settle("proposeAction again")
    assert second == {**first, "replayed": True}

    readme.values["the task id"] = task["id"]
    readme.values["the proposal id"] = proposal["id"]
    readme.values["the payloadDigest"] = proposal["payloadDigest"]

    tasks = await readme.run("tasks", alice)
    [node] = [e["node"] for e in tasks["edges"] if e["node"]["id"] == task["id"]]
    assert node["title"] and node["priority"] is not None and node["dueAt"]
    assert node["proposal"] == {
        "id": proposal["id"],
        "payloadDigest": proposal["payloadDigest"],
        "payload": PAYLOAD,
    }

    claimed = await readme.run("claimTask", alice)
    await settle("claimTask")
    assert claimed["state"] == "CLAIMED" and claimed["claimExpiresAt"]
    assert claimed["assignee"] == {"name": "alice"}

    decided = await readme.run("decideProposal", alice)
    await settle("decideProposal")
    assert decided == {
        "proposal": {"state": "QUEUED", "approvalCount": 1},
        "approval": {"decision": "APPROVED", "approver": {"name": "alice"}},
        "task": {"state": "COMPLETED"},
    }

    audit = await readme.run("auditEvents", ops)
    nodes = [e["node"] for e in audit["edges"]]
    assert {"proposal.proposed", "approval.approved", "proposal.approved"} <= {
        n["action"] for n in nodes
    }
    assert all(n["createdAt"] and n["details"] is not None for n in nodes)
    by_action = {n["action"]: n["actor"] for n in nodes}
    assert by_action["proposal.proposed"] == {"name": "refund-bot"}
    assert by_action["proposal.approved"] == {"name": "alice"}


async def test_the_worked_examples_run_one_after_the_other_on_one_database(
    serve: Serve, database_url: str, tmp_path: Path
) -> None:
    """The worked example in GraphiQL, then "See an approved action arrive" from a shell, as
    a newcomer follows them: one server on one database, each example's receiver started
    where the README starts it, and each approved action delivered to it. A worker delivers:
    the server's own, or ``signoff worker``."""
    queue = unique_queue()
    printed = _printed_serve_settings()
    server = await serve(SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue, **printed)
    shell = Shell(
        signoff_env(database_url, SIGNOFF_PORT=str(server.port)),
        ports={9000: free_port(), 9001: free_port()},
    )
    delivered: list[str] = []
    with delivering(database_url, queue, tmp_path, printed):
        try:
            async with Readme.against(server) as readme:
                readme.ports = shell.ports
                await _the_worked_example(readme, shell, database_url, delivered)
                await _from_a_shell(readme, shell, delivered)
                await readme.ready()
        finally:
            for proposal_id in delivered:
                await forget_jobs(queue, proposal_id)


def _printed_serve_settings() -> dict[str, str]:
    """The destination setting ``make serve`` is printed with, in the README's worked
    example and in Delivery's shell steps (one server stands in for both); none printed
    is none set: loopback receivers then get nothing."""
    readme = serve_settings(page_section("README.md", "## A worked example in GraphiQL"))
    delivery = serve_settings(
        page_section("docs/delivery.md", "## See an approved action arrive (embedded default)")
    )
    assert readme == delivery
    return {ALLOW: readme.get(ALLOW, "")}


async def _the_worked_example(
    readme: Readme, shell: Shell, database_url: str, delivered: list[str]
) -> None:
    ops = await token_create(database_url, "--name", "ops", "--role", "admin")
    await create_queue_and_target(readme, ops)
    [receiver] = [
        command
        for block in sh_blocks(page_section("README.md", "## A worked example in GraphiQL"))
        for command in commands(block)
        if " receiver " in command
    ]
    shell.values["the signingSecret"] = readme.values["the signingSecret"]
    with shell.background(receiver) as output:
        agent = await token_create(database_url, "--name", "refund-bot", "--role", "agent")
        alice = await token_create(
            database_url, "--name", "alice", "--role", "reviewer", "--queue", "payments"
        )
        await propose_review_decide(readme, ops=ops, agent=agent, alice=alice)
        proposal_id = readme.values["the proposal id"]
        delivered.append(proposal_id)
        await readme.applied(ops, proposal_id)
        await receiver_printed(
            output, f"POST /hooks/refunds webhook-id=msg_{proposal_id} attempt=1 signature verified"
        )
        await _deciding_better(
            readme, ops=ops, agent=agent, alice=alice, output=output, delivered=delivered
        )


async def _from_a_shell(readme: Readme, shell: Shell, delivered: list[str]) -> None:
    text = page_section("docs/delivery.md", "## See an approved action arrive (embedded default)")
    setup, receiving, propose_and_approve = sh_blocks(text)
    for command in commands(setup):
        data = await shell.run(command)
        if data and "createQueue" in data:
            shell.values["queue id"] = data["createQueue"]["id"]
        elif data and "registerTarget" in data:
            shell.values["target id"] = data["registerTarget"]["target"]["id"]
            shell.values["signing secret"] = data["registerTarget"]["signingSecret"]
    assert {"queue id", "target id", "signing secret"} <= set(shell.values)
    [receiver] = commands(receiving)
    with shell.background(receiver) as output:
        for command in commands(propose_and_approve):
            data = await shell.run(command)
            if data and "proposeAction" in data:
                proposal = data["proposeAction"]["proposal"]
                shell.values["proposal id"] = proposal["id"]
                shell.values["payload digest"] = proposal["payloadDigest"]
                delivered.append(proposal["id"])
            elif data and "decideProposal" in data:
                assert data == {"decideProposal": {"proposal": {"state": "QUEUED"}}}
        proposal_id = shell.values["proposal id"]
        await readme.applied(shell.env["ADMIN"], proposal_id)  # the token the shell made
        await receiver_printed(
            output, f"POST /returns webhook-id=msg_{proposal_id} attempt=1 signature verified"
        )
        assert '"operation_key": "refund-42"' in printed(output)


async def receiver_printed(output: IO[str], line: str) -> None:
    deadline = time.monotonic() + EVENTS_WITHIN
    while line not in printed(output):
        assert time.monotonic() < deadline, (
            f"the receiver did not print {line!r}:\n{printed(output)}"
        )
        await asyncio.sleep(0.1)


async def _deciding_better(
    readme: Readme, *, ops: str, agent: str, alice: str, output: IO[str], delivered: list[str]
) -> None:
    """The "Deciding better" section, continuing the worked example: simulate the policy,
    propose two more refunds, amend one (ops; alice, who did not write it, approves it),
    preview and make a bulk decision; the amended refund reaches the worked example's
    receiver."""
    simulated = await readme.run("simulatePolicy", alice)
    assert simulated["ruleName"] == "small" and simulated["autoApproved"] is True
    assert [e["matched"] for e in simulated["evaluations"]] == [True]

    proposed = await readme.run("proposeAction#2", agent)
    parcel, large = proposed["parcel"]["proposal"], proposed["large"]["proposal"]
    assert (parcel["requiredApprovals"], large["requiredApprovals"]) == (1, 2)
    readme.values |= {
        "the parcel proposal id": parcel["id"],
        "the parcel payloadDigest": parcel["payloadDigest"],
        "the large proposal id": large["id"],
        "the large payloadDigest": large["payloadDigest"],
    }
    amended = await readme.run("amendProposal", ops)
    assert amended["proposal"]["revision"] == 2 and amended["proposal"]["approvalCount"] == 0
    assert amended["revision"]["diff"] == [{"op": "replace", "path": "/amount", "value": 1000}]
    assert amended["revision"]["amendedBy"] == {"name": "ops"}
    readme.values["the amended payloadDigest"] = amended["proposal"]["payloadDigest"]

    preview = await readme.run("bulkDecisionPreview", alice)
    assert (preview["decidable"], preview["refused"]) == (2, 0)
    [by_target] = preview["byTarget"]
    assert by_target["count"] == 2 and repr(by_target["summaryTotal"]) == "41000"
    assert preview["byState"] == [{"state": "APPROVAL_REQUIRED", "count": 2}]

    decided = await readme.run("decideProposals", alice)
    delivered.append(parcel["id"])
    assert decided["replayed"] is False
    # The amended one needs one approval; the large one (40,000) a second reviewer.
    assert [(r["code"], r["proposal"]["state"]) for r in decided["results"]] == [
        (None, "QUEUED"),
        (None, "APPROVAL_REQUIRED"),
    ]
    # The same results again, each proposal as it is now: the amended one is being delivered.
    again = await readme.run("decideProposals", alice)
    assert (again["bulkId"], again["replayed"]) == (decided["bulkId"], True)
    assert [(r["proposalId"], r["code"]) for r in again["results"]] == [
        (r["proposalId"], r["code"]) for r in decided["results"]
    ]
    await readme.applied(alice, parcel["id"])
    await receiver_printed(
        output, f"POST /hooks/refunds webhook-id=msg_{parcel['id']} attempt=1 signature verified"
    )


@dataclass
class Watch:
    """The "Watch a queue" subscription, read as GraphiQL reads it."""

    ws: ClientConnection
    events: list[dict[str, Any]] = field(default_factory=list)
    errors: list[Any] = field(default_factory=list)
    ended: str | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def read(self) -> None:
        try:
            async for raw in self.ws:
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "next":
                    payload = message["payload"]
                    self.errors.extend(payload.get("errors") or [])
                    if payload.get("data"):
                        self.events.append(payload["data"]["queueEvents"])
                elif kind == "ping":
                    await self.ws.send(json.dumps({"type": "pong"}))
                elif kind == "error":
                    self.errors.extend(message["payload"])
                elif kind == "complete":
                    self.ended = "complete"
                    return
                self._changed.set()
        except ConnectionClosed as exc:
            self.ended = f"closed: {exc}"
        finally:
            self.ended = self.ended or "closed"
            self._changed.set()

    async def wait_for(self, count: int, after: str) -> None:
        deadline = time.monotonic() + EVENTS_WITHIN
        while len(self.events) < count and not self.errors and self.ended is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=remaining)
        kinds = [e["kind"] for e in self.events]
        if self.errors:
            raise AssertionError(f"after {after}: subscription errors {self.errors}")
        if len(self.events) < count:
            ended = f"; the subscription {self.ended}" if self.ended else ""
            raise AssertionError(
                f"after {after}: expected {count} events within {EVENTS_WITHIN} s, "
                f"got {kinds}{ended}"
            )


async def test_watching_a_queue_as_printed_while_the_example_runs(
    serve: Serve, database_url: str, sessionmaker: SessionMaker
) -> None:
    server = await serve()
    # "Watch a queue in GraphiQL", step 1: an operator, the queue, a reviewer of it.
    ops = await token_create(database_url, "--name", "ops", "--role", "admin")
    async with Readme.against(server) as readme:
        await create_queue_and_target(readme, ops)
        alice = await token_create(
            database_url, "--name", "alice", "--role", "reviewer", "--queue", "payments"
        )
        agent = await token_create(database_url, "--name", "refund-bot", "--role", "agent")
        # Alice's membership, made by the command, reaches the server by its relay: the
        # queue is watched from after it, as it would be by a person a few seconds later.
        await feed_published(sessionmaker)

        # Step 2: the reviewer's token in the Headers tab, sent as the connection_init
        # payload; the subscription exactly as printed, comments and all.
        subscription = readme.blocks["queueEvents"]
        assert subscription.operation == "subscription"
        assert "#" in subscription.text and not PLACEHOLDER.search(subscription.text)
        ws = await open_transport_ws(server.ws_url, {"Authorization": f"Bearer {alice}"})
        watch = Watch(ws)
        reader = asyncio.create_task(watch.read())
        try:
            await ws.send(
                json.dumps(
                    {"id": "1", "type": "subscribe", "payload": {"query": subscription.text}}
                )
            )
            # The subscription sees what commits once the server counts it live; the
            # queue is quiet until then.
            await server.subscriptions_live(1)
            expected = {
                "proposeAction": 2,
                "proposeAction again": 2,
                "claimTask": 3,
                "decideProposal": 5,
            }

            async def settle(step: str) -> None:
                await watch.wait_for(expected[step], after=step)

            # Step 3: "In a second tab, propose, claim and approve".
            await propose_review_decide(readme, ops=ops, agent=agent, alice=alice, settle=settle)
            await readme.ready()
            await asyncio.sleep(0.5)  # nothing more arrives
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            ws.transport.abort()
        assert_watched(watch, readme.values["the proposal id"], readme.values["the task id"])


def assert_watched(watch: Watch, proposal_id: str, task_id: str) -> None:
    """Every event, with its nested actor, proposal and task as they were at that step."""
    assert not watch.errors
    events = watch.events
    assert [e["kind"] for e in events] == [
        "proposal.proposed",
        "task.created",
        "task.claimed",
        "proposal.approved",
        "task.completed",
    ]
    for event in events:
        assert event["cursor"] and event["occurredAt"], event
        assert event["entityType"] in ("proposal", "task"), event
    proposed, created, claimed, approved, completed = events

    assert proposed["entityId"] == proposal_id
    assert proposed["actor"] == {"name": "refund-bot"}
    assert proposed["proposal"] == {
        "id": proposal_id,
        "state": "APPROVAL_REQUIRED",
        "approvalCount": 0,
    }
    assert proposed["task"] is None  # the event is about the proposal

    assert created["entityId"] == task_id
    assert created["actor"] == {"name": "refund-bot"}
    assert created["proposal"] == proposed["proposal"]
    assert created["task"] == {"id": task_id, "state": "OPEN", "assignee": None}

    assert claimed["entityId"] == task_id
    assert claimed["actor"] == {"name": "alice"}
    assert claimed["proposal"] == proposed["proposal"]
    assert claimed["task"] == {"id": task_id, "state": "CLAIMED", "assignee": {"name": "alice"}}

    assert approved["entityId"] == proposal_id
    assert approved["actor"] == {"name": "alice"}
    assert approved["proposal"] == {"id": proposal_id, "state": "QUEUED", "approvalCount": 1}
    assert approved["task"] is None

    assert completed["entityId"] == task_id
    assert completed["actor"] == {"name": "alice"}
    assert completed["proposal"] == approved["proposal"]
    assert completed["task"] == {"id": task_id, "state": "COMPLETED", "assignee": None}


async def wait_for_state(world: World, proposal_id: str, state: str) -> None:
    """Until the embedded worker has brought the proposal to ``state``."""
    deadline = time.monotonic() + EVENTS_WITHIN
    while time.monotonic() < deadline:
        if (await read(world, proposal_id))["state"] == state:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"proposal {proposal_id} did not become {state}")


@contextlib.contextmanager
def delivering(
    database_url: str, queue: str, logs: Path, env: dict[str, str] | None = None
) -> Iterator[None]:
    """With Redis, a ``signoff worker`` on the server's arq queue (Delivery's "Running
    distributed"), with the server's destination setting (``env``, when the test's is not
    it); on the embedded default the server's in-process worker delivers."""
    if REDIS_URL is None:
        yield
        return
    settings = arq_settings(database_url, queue)
    if env is not None:
        allowed = parse_networks(ALLOW, env[ALLOW])
        settings = dataclasses.replace(settings, delivery_allow_networks=allowed)
    workers = Workers(settings, logs)
    workers.start()
    try:
        yield
    finally:
        workers.stop()


async def forget_jobs(queue: str, proposal_id: str) -> None:
    """Redis is shared with other runs: delete this test's queue and its jobs' keys."""
    if REDIS_URL is None:
        return
    redis = Redis.from_url(REDIS_URL)
    try:
        keys = [key async for key in redis.scan_iter(match=f"*{proposal_id}*")]
        await redis.delete(queue, f"{queue}:health-check", *keys)
    finally:
        await redis.aclose()


async def test_operating_signoff_as_printed(
    serve: Serve, sessionmaker: SessionMaker, database_url: str, tmp_path: Path
) -> None:
    """The operator section: a delivery the README's ``signoff receiver --status 400``
    refuses opens an incident; it is acknowledged, retried once the receiver is restarted
    as printed (answering 200), and resolved; the target is paused
    and resumed, limited, and its circuit (opened by hand) closed. A real worker delivers:
    the server's own, or ``signoff worker``."""
    queue = unique_queue()
    server = await serve(SIGNOFF_EMBEDDED_WORKER="1", SIGNOFF_ARQ_QUEUE=queue)
    proposal: dict[str, Any] = {"id": "none yet"}
    with delivering(database_url, queue, tmp_path):
        try:
            await _work_an_incident(server, sessionmaker, database_url, proposal)
        finally:
            await forget_jobs(queue, proposal["id"])


async def _work_an_incident(
    server: Server, sessionmaker: SessionMaker, database_url: str, proposal: dict[str, Any]
) -> None:
    refusing, fixed = [
        command
        for block in sh_blocks(
            page_section("docs/operating.md", "## Work an incident from open to resolved")
        )
        for command in commands(block)
    ]
    assert "--status 400" in refusing and "--status" not in fixed
    shell = Shell(signoff_env(database_url), ports={9000: free_port()})
    async with Readme.against(server) as readme, http_gql(server, sessionmaker) as gql:
        world = await build_world(gql, url=f"http://127.0.0.1:{shell.ports[9000]}/hooks/refunds")
        shell.values["the signingSecret"] = world.signing_secret
        with shell.background(refusing) as output:
            proposal.update(await approved(world))
            await wait_for_state(world, proposal["id"], "FAILED")
            await receiver_printed(
                output, f"POST /hooks/refunds webhook-id=msg_{proposal['id']} attempt=1"
            )
            await _open_and_acknowledge(readme, world, proposal)
        with shell.background(fixed):
            await _resolve_and_control(readme, gql, world, proposal)


async def _open_and_acknowledge(readme: Readme, world: World, proposal: dict[str, Any]) -> None:
    """The snapshot and the incident list show the refused delivery; it is taken up."""
    ops = world.admin
    snapshot = await readme.run("operationsSnapshot", ops)
    assert snapshot["proposalDelivery"]["terminalFailures"] == 1
    assert {"severity": "HIGH", "count": 1} in snapshot["openIncidents"]
    statistics = await readme.run("operationsStatistics", ops)
    hours = statistics["hours"]
    assert sum(h["decided"] for h in hours) == 1 and sum(h["applied"] for h in hours) == 0
    assert hours[-1]["openIncidents"] == 1
    assert statistics["timeToDecision"]["count"] == 1

    [incident] = (await readme.run("incidents", ops))["nodes"]
    assert incident["category"] == "delivery_dead_letter"
    assert incident["proposal"]["id"] == proposal["id"]
    assert incident["target"]["name"].startswith("refunds-")
    readme.values["the incident id"] = incident["id"]

    acknowledged = await readme.run("acknowledgeIncident", ops)
    assert acknowledged["incident"]["state"] == "ACKNOWLEDGED"


async def _resolve_and_control(
    readme: Readme, gql: GraphQLClient, world: World, proposal: dict[str, Any]
) -> None:
    """With the receiver fixed: the incident retried and resolved, the target controlled."""
    ops = world.admin
    retried = await readme.run("retryIncident", ops)
    assert retried["repairAction"]["actionType"] == "retry_delivery"
    assert retried["repairAction"]["after"]["state"] == "QUEUED"
    await wait_for_state(world, proposal["id"], "APPLIED")
    resolved = await readme.run("resolveIncident", ops)
    assert resolved["incident"]["state"] == "RESOLVED"
    assert resolved["incident"]["resolutionCode"] == "receiver_fixed"

    readme.values["the target id"] = world.target_id
    paused = await readme.run("pauseTarget", ops)
    assert paused["target"]["pausedAt"]
    resumed = await readme.run("resumeTarget", ops)
    assert resumed["target"]["pausedAt"] is None
    limited = (await readme.run("setTargetLimits", ops))["target"]
    assert (limited["maxConcurrency"], limited["ratePerSecond"]) == (5, 2.0)
    await open_circuit(gql, world)  # as the delivery engine leaves it after failures
    [circuit] = await readme.run("targets", ops)
    assert circuit["circuitState"] == "OPEN" and circuit["nextProbeAt"]
    closed = await readme.run("closeTargetCircuit", ops)
    assert closed["target"]["circuitState"] == "CLOSED"
    assert closed["target"]["consecutiveFailures"] == 0
    metrics = (await readme.http.get("/metrics")).text
    assert 'signoff_open_incidents{severity="HIGH"} 0.0' in metrics
    await readme.ready()


async def test_the_queue_owners_section_runs_as_printed(
    serve: Serve, sessionmaker: SessionMaker
) -> None:
    """Deadline policies and reminders: a queue that reminds, a target that escalates to
    it, a proposal that overrides the policy, the proposal showing it, and the queue's
    statistics (deadlines and reminders coming due are in tests/jobs/test_deadlines.py and
    test_reminders.py, on a frozen clock)."""
    server = await serve()
    async with Readme.against(server) as readme, http_gql(server, sessionmaker) as gql:
        world = await build_world(gql)
        escalation = await readme.run("createQueue#2", world.admin)
        assert escalation["reminderPercents"] == [50, 90]
        readme.values["the queue id"] = world.queue_id
        readme.values["the escalation queue id"] = escalation["id"]
        target = (await readme.run("registerTarget#2", world.admin))["target"]
        assert target["deadlinePolicy"] == {
            "action": "ESCALATE",
            "escalation": [{"deadlineSeconds": 3600, "queue": {"slug": "escalations"}}],
        }
        readme.values["the payouts target id"] = target["id"]
        payout = await readme.run("proposeAction#3", world.agent)
        proposed = payout["proposal"]
        assert proposed["state"] == "APPROVAL_REQUIRED"
        assert proposed["deadlinePolicy"] == {
            "action": "REJECT",
            "reason": "Stale after an hour: the bot proposes again.",
        }
        readme.values["the proposal id"] = proposed["id"]
        shown = await readme.run("proposal", world.admin)
        assert (shown["escalationLevel"], shown["queue"]) == (0, {"slug": world.queue_slug})
        assert shown["deadlinePolicy"]["escalation"] == []
        stats = await readme.run("queueStats", world.reviewers[0])
        assert (stats["openItems"], stats["pastSla"], stats["windowSeconds"]) == (1, 0, 86400)
        channel = await readme.run("addNotificationChannel", world.admin)
        assert channel["channel"]["kind"] == "SLACK" and channel["signingSecret"] is None
        readme.values["the channel id"] = channel["channel"]["id"]
        disabled = await readme.run("disableNotificationChannel", world.admin)
        assert disabled["disabled"] is True and disabled["disabledAt"]
        removed = await readme.run("removeNotificationChannel", world.admin)
        assert removed["disabled"] is True and removed["removedAt"]

        readme.values["the payout task id"] = payout["task"]["id"]
        alice = await gql.token(Role.REVIEWER, name="alice", queues=[world.queue_slug])
        alice_id = (await gql("query { viewer { actor { id } } }", token=alice))["viewer"]
        [found] = (await readme.run("actors", world.admin))["nodes"]
        assert found == {"id": alice_id["actor"]["id"], "name": "alice", "role": "REVIEWER"}
        readme.values["the reviewer id"] = found["id"]
        link = await readme.run("createApprovalLink", world.admin)
        assert link["link"]["state"] == "ACTIVE"
        page = await readme.http.get(link["path"])
        assert page.status_code == 200 and link["link"]["payloadDigest"] in page.text
        decided = await readme.http.post(
            link["path"],
            data={"payload_digest": link["link"]["payloadDigest"], "decision": "APPROVED"},
        )
        assert decided.status_code == 200, decided.text
        assert (await readme.http.get(link["path"])).status_code == 410
        personal = (await readme.run("addNotificationChannel#2", world.admin))["channel"]
        assert personal == {
            "id": personal["id"],
            "kind": "SLACK",
            "reviewerId": readme.values["the reviewer id"],
            "approvalLinkTtlSeconds": 7200,
        }
        await readme.ready()


def site_pages() -> list[str]:
    """README.md and every page of the documentation site, by their paths."""
    return ["README.md", *(f"docs/{p.relative_to(DOCS)}" for p in sorted(DOCS.rglob("*.md")))]


def test_every_page_that_prints_graphql_examples_is_run() -> None:
    """A page of the site with a ``graphql`` block is one whose blocks the tests above send
    (a page's copy of a README section is the README's, run as the README's)."""
    printing = [name for name in site_pages() if FENCE.search(COPY.sub("", page(name)))]
    assert sorted(printing) == sorted(EXAMPLE_PAGES)


def test_the_readme_promises_nothing_the_schema_already_has() -> None:
    """A paragraph of the README or the site that announces fields as coming names none that
    the schema has."""
    schema = graphql.build_schema((ROOT / "schema.graphql").read_text())
    roots = [schema.query_type, schema.mutation_type, schema.subscription_type]
    fields = {name for root in roots if root is not None for name in root.fields}
    for name in site_pages():
        for paragraph in page(name).split("\n\n"):
            if re.search(r"on (its|their) way|coming soon|not (yet )?available", paragraph):
                named = set(re.findall(r"`(\w+)\(", paragraph))
                assert not named & fields, f"{name}: announced as coming, but served: {paragraph}"


@requires_postgres
@requires_redis
async def test_running_distributed_as_printed(
    sessionmaker: SessionMaker, database_url: str
) -> None:
    """The "Running distributed" recipe run as one shell script: two ``signoff serve`` and
    a ``signoff worker``. Only the URLs (the test's PostgreSQL database and Redis), the
    ports (free ones) and the key (the one this database was sealed with) are the test's.
    A proposal made and approved through the second API process is delivered by the
    worker and read as applied through the first."""
    [recipe] = sh_blocks(page_section("docs/delivery.md", "## Running distributed"))
    assert REDIS_URL is not None
    env = signoff_env(database_url, SIGNOFF_ARQ_QUEUE=unique_queue())
    del env[ALLOW]  # as a reader's shell: the recipe sets it
    script = recipe.replace("postgresql://postgres@127.0.0.1:5432/signoff", database_url).replace(
        "redis://127.0.0.1:6379/0", REDIS_URL
    )
    script = re.sub(
        r"^export SIGNOFF_SECRET_KEY=.*$",
        f"export SIGNOFF_SECRET_KEY={env['SIGNOFF_SECRET_KEY']}",
        script,
        flags=re.M,
    )
    assert script.count(" serve --port ") == 2 and "signoff worker" in script
    shell = Shell(env, ports={8000: free_port(), 8001: free_port()})
    proposal: dict[str, Any] = {"id": "none yet"}
    first, second = (f"http://127.0.0.1:{port}" for port in shell.ports.values())
    try:
        with shell.background(script) as output:
            await until_ready(first, output)
            await until_ready(second, output)
            async with (
                httpx.AsyncClient(base_url=first, timeout=GIVE_UP_AFTER) as one,
                httpx.AsyncClient(base_url=second, timeout=GIVE_UP_AFTER) as two,
                serve_receiver(Receiver([Answer(200)])) as receiver,
            ):
                world = await build_world(GraphQLClient(one, sessionmaker), url=receiver.url)
                receiver.secret = world.signing_secret
                world.gql = GraphQLClient(two, sessionmaker)
                proposal.update(await approved(world))
                world.gql = GraphQLClient(one, sessionmaker)
                await wait_for_state(world, proposal["id"], "APPLIED")
    finally:
        await forget_jobs(env["SIGNOFF_ARQ_QUEUE"], proposal["id"])


async def until_ready(base: str, output: IO[str]) -> None:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=base, timeout=1) as http:
        while True:
            with contextlib.suppress(httpx.TransportError):
                if (await http.get("/readyz")).status_code == 200:
                    return
            assert time.monotonic() < deadline, f"{base} not ready:\n{printed(output)}"
            await asyncio.sleep(0.2)
