"""Relay's ``node(id:)`` and ``nodes(ids:)``: any object with an id is fetched again by its
id alone, under the same visibility as its own query; an id no object has, or a malformed
one, is ``NOT_FOUND``."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import graphql
from starlette.applications import Starlette

from signoff import clock
from signoff.models import (
    DeadLetter,
    Delegation,
    DeliveryAttempt,
    Incident,
    ReconciliationRun,
    ReconciliationState,
    RepairAction,
    ResponseClass,
    Role,
)
from signoff.resolvers.core.nodes import revision_node_id
from signoff.schema import build_schema
from tests.helpers import GraphQLClient, build_world
from tests.schema.test_draft_reads import draft_row
from tests.schema.test_pagination import counting_statements

NODE = """query($id: ID!) {
  node(id: $id) {
    __typename id
    ... on Proposal { state payloadDigest }
    ... on HumanTask { taskState: state title }
    ... on Queue { slug }
    ... on Target { name }
  }
}"""

NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { __typename id } }"


async def test_node_fetches_each_kind_of_object_by_its_id(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    proposal, task = proposed["proposal"], proposed["task"]
    reviewer = world.reviewers[0]

    found = (await gql(NODE, {"id": proposal["id"]}, reviewer))["node"]
    assert found == {
        "__typename": "Proposal",
        "id": proposal["id"],
        "state": "APPROVAL_REQUIRED",
        "payloadDigest": proposal["payloadDigest"],
    }
    found = (await gql(NODE, {"id": task["id"]}, reviewer))["node"]
    assert (found["__typename"], found["taskState"]) == ("HumanTask", "OPEN")
    found = (await gql(NODE, {"id": world.queue_id}, reviewer))["node"]
    assert found == {"__typename": "Queue", "id": world.queue_id, "slug": world.queue_slug}
    found = (await gql(NODE, {"id": world.target_id}, reviewer))["node"]
    assert found["__typename"] == "Target"


async def test_unknown_foreign_and_malformed_ids_are_not_found(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    for node_id in (str(uuid.uuid4()), "not-an-id", "", "x" * 500, "' OR 1=1 --"):
        refused = await gql.error(NODE, {"id": node_id}, world.admin)
        assert refused.code == "NOT_FOUND", node_id


async def test_node_applies_the_visibility_of_the_object(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    outsider = await gql.token(Role.REVIEWER, name="outsider")
    # Not FORBIDDEN: node does not tell an outsider which ids exist.
    refused = await gql.error(NODE, {"id": proposed["proposal"]["id"]}, outsider)
    assert refused.code == "NOT_FOUND"
    refused = await gql.error(NODE, {"id": world.queue_id}, outsider)
    assert refused.code == "NOT_FOUND"


async def test_nodes_answers_each_id_in_order_with_a_refusal_where_it_fails(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    ids = [proposed["task"]["id"], "malformed", proposed["proposal"]["id"]]
    body = await gql.raw(NODES, {"ids": ids}, world.reviewers[0])
    assert body["data"]["nodes"] == [
        {"__typename": "HumanTask", "id": ids[0]},
        None,
        {"__typename": "Proposal", "id": ids[2]},
    ]
    assert [(e["path"], e["extensions"]["code"]) for e in body["errors"]] == [
        (["nodes", 1], "NOT_FOUND")
    ]


async def test_nodes_takes_at_most_a_page_of_ids(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    refused = await gql.error(NODES, {"ids": [world.queue_id] * 101}, world.admin)
    assert refused.code == "VALIDATION_FAILED"


# Every object type with an id, one of each, and who may and may not read it.
ME = "query { viewer { actor { id } } }"
AMEND = """mutation($input: AmendProposalInput!) {
  amendProposal(input: $input) { proposal { payloadDigest } } }"""
READ_PROPOSAL = """query($id: ID!) { proposal(id: $id) {
  approvals { id } revisions { id revision digest } } }"""
CREATE_LINK = """mutation($input: CreateApprovalLinkInput!) {
  createApprovalLink(input: $input) { link { id } } }"""
ADD_CHANNEL = """mutation($input: AddNotificationChannelInput!) {
  addNotificationChannel(input: $input) { channel { id } } }"""
AUDIT = "query { auditEvents(first: 1) { nodes { id } } }"
EVERY_FIELD_NODE = """query($id: ID!) { node(id: $id) {
  __typename id
  ... on ProposalRevision { revision digest }
  ... on Approval { decision }
  ... on Actor { name }
} }"""


@dataclass
class Sample:
    """One object: its type, its id, a viewer who may read it and one who may not."""

    typename: str
    id: str
    reader: str
    outsider: str | None  # None: every signed-in viewer may read it (targets)


async def actor_id(gql: GraphQLClient, token: str) -> str:
    found: str = (await gql(ME, token=token))["viewer"]["actor"]["id"]
    return found


async def one_of_each(gql: GraphQLClient) -> list[Sample]:
    """An object of every type that implements Node, made through the API where it is short
    to, and stored directly where only a delivery or a sweep would make it."""
    world = await build_world(gql, required_approvals=2)
    first, second = world.reviewers
    outsider = await gql.token(Role.REVIEWER, name="outsider")
    operator = await gql.token(Role.OPERATOR, name="operator")
    first_id, second_id = await actor_id(gql, first), await actor_id(gql, second)

    amended = (await world.propose())["proposal"]
    amendment = {
        "proposalId": amended["id"],
        "basedOnDigest": amended["payloadDigest"],
        "reason": "The customer paid 80, not 100.",
        "payload": {"amount": 80, "currency": "EUR"},
    }
    digest = (await gql(AMEND, {"input": amendment}, first))["amendProposal"]["proposal"]
    await world.decide(second, {"id": amended["id"], **digest})
    read = (await gql(READ_PROPOSAL, {"id": amended["id"]}, world.admin))["proposal"]
    plain = await world.propose()
    plain_revision = (await gql(READ_PROPOSAL, {"id": plain["proposal"]["id"]}, world.admin))[
        "proposal"
    ]["revisions"][0]
    link = await gql(
        CREATE_LINK,
        {"input": {"taskId": plain["task"]["id"], "reviewerId": second_id}},
        world.admin,
    )
    channel = await gql(
        ADD_CHANNEL,
        {"input": {"queueId": world.queue_id, "kind": "WEBHOOK", "url": "http://127.0.0.1:9/n"}},
        world.admin,
    )
    audit_event = (await gql(AUDIT, token=operator))["auditEvents"]["nodes"][0]
    api_token = (await gql("{ tokens { id } }", token=world.admin))["tokens"][0]
    stored = await store_the_rest(gql, amended["id"], first_id, second_id)

    return [
        Sample("Proposal", amended["id"], first, outsider),
        Sample("HumanTask", plain["task"]["id"], first, outsider),
        Sample("Queue", world.queue_id, first, outsider),
        Sample("Target", world.target_id, first, outsider),
        Sample("Actor", first_id, first, second),
        Sample("Actor", second_id, operator, first),
        Sample("Approval", read["approvals"][0]["id"], first, outsider),
        *(Sample("ProposalRevision", r["id"], first, outsider) for r in read["revisions"]),
        Sample("ProposalRevision", plain_revision["id"], second, outsider),
        Sample("ApprovalLink", link["createApprovalLink"]["link"]["id"], second, first),
        Sample(
            "NotificationChannel",
            channel["addNotificationChannel"]["channel"]["id"],
            operator,
            first,
        ),
        Sample("AuditEvent", audit_event["id"], operator, first),
        Sample("ApiToken", api_token["id"], world.admin, first),
        Sample("DeliveryAttempt", stored["DeliveryAttempt"], first, outsider),
        Sample("Delegation", stored["Delegation"], first, outsider),
        Sample("Draft", stored["Draft"], first, second),
        Sample("Incident", stored["Incident"], operator, first),
        Sample("DeadLetter", stored["DeadLetter"], operator, first),
        Sample("RepairAction", stored["RepairAction"], operator, first),
        Sample("ReconciliationRun", stored["ReconciliationRun"], operator, first),
    ]


async def store_the_rest(
    gql: GraphQLClient, proposal_id: str, first_id: str, second_id: str
) -> dict[str, str]:
    now = clock.now()
    incident = Incident(
        fingerprint=uuid.uuid4().hex,
        kind="delivery_dead_letter",
        severity="HIGH",
        title="Delivery gave up",
        entity_type="proposal",
        entity_id=proposal_id,
        first_seen_at=now,
        last_seen_at=now,
    )
    run = ReconciliationRun(state=ReconciliationState.SUCCEEDED, finished_at=now)
    attempt = DeliveryAttempt(
        proposal_id=proposal_id,
        attempt_number=1,
        response_class=ResponseClass.RETRYABLE,
        status_code=503,
        request_digest="sha256:" + "0" * 64,
        duration_ms=5,
        started_at=now,
        finished_at=now,
    )
    delegation = Delegation(
        actor_id=first_id, delegate_id=second_id, starts_at=now, ends_at=now + timedelta(days=1)
    )
    draft = draft_row(first_id)
    async with gql.sessionmaker() as session:
        session.add_all([incident, run, attempt, delegation, draft])
        await session.flush()
        letter = DeadLetter(
            incident_id=incident.id,
            job_type="deliver_proposal",
            job_id=str(uuid.uuid4()),
            proposal_id=proposal_id,
            error_code="HTTP_503",
            attempt_count=8,
        )
        repair = RepairAction(
            reconciliation_run_id=run.id,
            action_type="release_lease",
            entity_type="proposal",
            entity_id=proposal_id,
            operation_key=uuid.uuid4().hex,
        )
        session.add_all([letter, repair])
        await session.commit()
    return {
        "Incident": incident.id,
        "ReconciliationRun": run.id,
        "DeliveryAttempt": attempt.id,
        "Delegation": delegation.id,
        "Draft": draft.id,
        "DeadLetter": letter.id,
        "RepairAction": repair.id,
    }


def test_every_object_type_with_an_id_implements_node() -> None:
    schema = build_schema()._schema
    node = schema.get_type("Node")
    assert isinstance(node, graphql.GraphQLInterfaceType)
    with_id = {
        name
        for name, kind in schema.type_map.items()
        if isinstance(kind, graphql.GraphQLObjectType) and "id" in kind.fields
    }
    implementing = {t.name for t in schema.get_possible_types(node)}
    # A DraftReference is a draft without its values; its id is the draft's own.
    assert with_id - implementing == {"DraftReference"}
    assert implementing == with_id - {"DraftReference"}


async def test_node_fetches_every_kind_of_object_by_its_id(gql: GraphQLClient) -> None:
    samples = await one_of_each(gql)
    schema = build_schema()._schema
    node = schema.get_type("Node")
    assert isinstance(node, graphql.GraphQLInterfaceType)
    assert {s.typename for s in samples} == {t.name for t in schema.get_possible_types(node)}
    for sample in samples:
        found = (await gql(EVERY_FIELD_NODE, {"id": sample.id}, sample.reader))["node"]
        assert (found["__typename"], found["id"]) == (sample.typename, sample.id), sample


async def test_node_answers_not_found_for_what_the_viewer_may_not_see(
    gql: GraphQLClient,
) -> None:
    for sample in await one_of_each(gql):
        if sample.outsider is None:
            continue
        refused = await gql.error(NODE, {"id": sample.id}, sample.outsider)
        assert refused.code == "NOT_FOUND", sample


async def test_nodes_reads_every_kind_at_once_with_few_statements(
    gql: GraphQLClient, app: Starlette
) -> None:
    samples = await one_of_each(gql)
    admin = await gql.token(Role.ADMIN, name="root")
    ids = [s.id for s in samples] + ["malformed"]
    with counting_statements(app) as statements:
        body = await gql.raw(NODES, {"ids": ids}, admin)
    assert body["data"]["nodes"][:-1] == [{"__typename": s.typename, "id": s.id} for s in samples]
    assert body["data"]["nodes"][-1] is None
    assert [e["extensions"]["code"] for e in body["errors"]] == ["NOT_FOUND"]
    # The viewer, which table holds each id, each kind's rows, their proposals, revisions:
    # one statement per table, not one (or one per table tried) per id.
    kinds = len({s.typename for s in samples})
    assert len(statements) <= kinds + 6, statements


async def test_nodes_refuses_each_hidden_object_alone(gql: GraphQLClient) -> None:
    samples = await one_of_each(gql)
    first = samples[0].reader  # a reviewer of the queue; the draft and delegation are theirs
    body = await gql.raw(NODES, {"ids": [s.id for s in samples]}, first)
    hidden = [i for i, s in enumerate(samples) if s.outsider == first]
    assert len(hidden) == 9
    for index, (sample, found) in enumerate(zip(samples, body["data"]["nodes"], strict=True)):
        if index in hidden:
            assert found is None, sample
        else:
            assert (found["__typename"], found["id"]) == (sample.typename, sample.id)
    assert [(e["path"], e["extensions"]["code"]) for e in body["errors"]] == [
        (["nodes", index], "NOT_FOUND") for index in hidden
    ]


async def test_revision_ids_are_opaque_and_near_misses_are_not_found(
    gql: GraphQLClient,
) -> None:
    world = await build_world(gql)
    proposal = (await world.propose())["proposal"]
    read = (await gql(READ_PROPOSAL, {"id": proposal["id"]}, world.admin))["proposal"]
    revision_id = read["revisions"][0]["id"]
    assert proposal["id"] not in revision_id
    assert revision_id == revision_node_id(proposal["id"], 1)
    found = (await gql(EVERY_FIELD_NODE, {"id": revision_id}, world.reviewers[0]))["node"]
    assert found == {
        "__typename": "ProposalRevision",
        "id": revision_id,
        "revision": 1,
        "digest": proposal["payloadDigest"],
    }
    for near_miss in (
        revision_node_id(proposal["id"], 2),  # no such revision
        revision_node_id(str(uuid.uuid4()), 1),  # no such proposal
        revision_id + "=",  # another spelling of the same bytes
        revision_id[:-2],
    ):
        refused = await gql.error(NODE, {"id": near_miss}, world.admin)
        assert refused.code == "NOT_FOUND", near_miss
