"""Every refusal has a stable code, a message a person understands, and changes nothing."""

from __future__ import annotations

from typing import Any

from signoff.models import Role
from tests.helpers import (
    CLAIM,
    COMPLETE,
    CREATE_QUEUE,
    DECIDE,
    PROPOSE,
    REGISTER_TARGET,
    GraphQLClient,
    World,
    build_world,
)

PROPOSAL_STATE = """query($id: ID!) { proposal(id: $id) { state approvalCount
  approvals { id } task { state assignee { name } } } }"""
AUDIT_COUNT = "{ auditEvents(first: 100) { edges { node { id } } } }"


async def snapshot(world: World, proposal_id: str) -> tuple[Any, int]:
    """The proposal as an operator sees it, and how many audit events exist."""
    proposal = (await world.gql(PROPOSAL_STATE, {"id": proposal_id}, world.admin))["proposal"]
    audit = (await world.gql(AUDIT_COUNT, None, world.admin))["auditEvents"]["edges"]
    return proposal, len(audit)


async def test_no_token_or_a_bad_token_is_unauthenticated(gql: GraphQLClient) -> None:
    for token in (None, "so_not-a-real-token"):
        error = await gql.error("{ viewer { actor { name } } }", token=token)
        assert error.code == "UNAUTHENTICATED"
        assert "token" in error.errors[0]["message"]


async def test_wrong_role_is_forbidden_and_creates_nothing(gql: GraphQLClient) -> None:
    reviewer = await gql.token(Role.REVIEWER)
    error = await gql.error(CREATE_QUEUE, {"input": {"slug": "ops", "name": "Ops"}}, reviewer)
    assert error.code == "FORBIDDEN"
    admin = await gql.token(Role.ADMIN)
    assert (await gql("{ queues { slug } }", token=admin))["queues"] == []


async def test_unknown_proposal_is_not_found(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    error = await gql.error(
        'query { proposal(id: "00000000-0000-7000-8000-000000000000") { id } }', token=admin
    )
    assert error.code == "NOT_FOUND"


async def test_out_of_range_input_is_validation_failed(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    bad_slug = await gql.error(
        CREATE_QUEUE, {"input": {"slug": "Not A Slug", "name": "x"}}, world.admin
    )
    assert bad_slug.code == "VALIDATION_FAILED"
    assert bad_slug.errors[0]["extensions"]["field"] == "slug"
    too_soon = await gql.error(
        PROPOSE,
        {
            "input": {
                "targetId": world.target_id,
                "actionCode": "refund.create",
                "operationKey": "k1",
                "payload": {"amount": 1, "currency": "EUR"},
                "expiresInSeconds": 5,
            }
        },
        world.agent,
    )
    assert too_soon.code == "VALIDATION_FAILED"
    assert "expiresInSeconds" in too_soon.errors[0]["message"]
    page = await gql.error("{ proposals(first: 500) { edges { cursor } } }", token=world.admin)
    assert page.code == "VALIDATION_FAILED"
    assert (await gql("{ proposals { edges { cursor } } }", token=world.admin))["proposals"][
        "edges"
    ] == []


async def test_an_invalid_json_schema_is_schema_invalid(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    error = await gql.error(
        REGISTER_TARGET,
        {
            "input": {
                "name": "broken",
                "url": "https://example.test/hook",
                "approvalMode": "BOUNDED_AUTO",
                "inputSchema": {"type": "nonsense"},
            }
        },
        admin,
    )
    assert error.code == "SCHEMA_INVALID"
    assert error.errors[0]["extensions"]["field"] == "inputSchema"
    assert (await gql("{ targets { id } }", token=admin))["targets"] == []


async def test_a_payload_breaking_the_schema_names_each_pointer(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    error = await gql.error(
        PROPOSE,
        {
            "input": {
                "targetId": world.target_id,
                "actionCode": "refund.create",
                "operationKey": "k1",
                "payload": {"amount": 0, "extra": {"deep": True}},
            }
        },
        world.agent,
    )
    assert error.code == "PAYLOAD_SCHEMA_INVALID"
    problems = error.errors[0]["extensions"]["errors"]
    assert {p["pointer"] for p in problems} == {"", "/amount"}
    assert any("currency" in p["message"] for p in problems)
    assert (await gql("{ proposals { edges { cursor } } }", token=world.admin))["proposals"][
        "edges"
    ] == []


async def test_a_retired_target_is_unavailable(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    await gql(
        "mutation($id: ID!) { retireTarget(input: {targetId: $id}) { active } }",
        {"id": world.target_id},
        world.admin,
    )
    error = await gql.error(
        PROPOSE,
        {
            "input": {
                "targetId": world.target_id,
                "actionCode": "refund.create",
                "operationKey": "k1",
                "payload": {"amount": 1, "currency": "EUR"},
            }
        },
        world.agent,
    )
    assert error.code == "TARGET_UNAVAILABLE"


async def test_the_same_operation_key_with_other_content_is_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    first = await world.propose({"amount": 100, "currency": "EUR"}, operation_key="refund-42")
    error = await gql.error(
        PROPOSE,
        {
            "input": {
                "targetId": world.target_id,
                "actionCode": "refund.create",
                "subject": {"order": "o-1"},
                "operationKey": "refund-42",
                "payload": {"amount": 999, "currency": "EUR"},
            }
        },
        world.agent,
    )
    assert error.code == "IDEMPOTENCY_KEY_REUSED"
    assert error.errors[0]["extensions"]["proposalId"] == first["proposal"]["id"]
    assert error.errors[0]["extensions"]["operation"] == "proposeAction"


async def test_a_used_operation_key_is_refused_before_its_target_is_missed(
    gql: GraphQLClient,
) -> None:
    # The key's look and the target's read are one statement: a key used before answers
    # as it did when they were two, whether or not the new request's target exists.
    world = await build_world(gql)
    first = await world.propose(operation_key="refund-43")
    request = {
        "targetId": "no-such-target",
        "actionCode": "refund.create",
        "payload": {"amount": 100, "currency": "EUR"},
    }
    used = {"input": {**request, "operationKey": "refund-43"}}
    error = await gql.error(PROPOSE, used, world.agent)
    assert error.code == "IDEMPOTENCY_KEY_REUSED"
    assert error.errors[0]["extensions"]["proposalId"] == first["proposal"]["id"]
    new = {"input": {**request, "operationKey": "refund-44"}}
    assert (await gql.error(PROPOSE, new, world.agent)).code == "NOT_FOUND"


async def test_decisions_are_refused_with_state_unchanged(gql: GraphQLClient) -> None:
    world = await build_world(gql, reviewers=2, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    reviewer, other = world.reviewers
    outsider = await gql.token(Role.REVIEWER, name="outsider")
    before = await snapshot(world, proposal["id"])

    wrong_digest = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": "sha256:" + "0" * 64,
            }
        },
        reviewer,
    )
    assert wrong_digest.code == "PAYLOAD_DIGEST_MISMATCH"

    forbidden = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        outsider,
    )
    assert forbidden.code == "FORBIDDEN"

    agent_decides = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.agent,
    )
    assert agent_decides.code == "FORBIDDEN"

    short_reason = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "REJECTED",
                "reason": "no",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        reviewer,
    )
    assert short_reason.code == "VALIDATION_FAILED"
    assert await snapshot(world, proposal["id"]) == before

    await world.decide(reviewer, proposal)
    twice = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "REJECTED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        reviewer,
    )
    assert twice.code == "ALREADY_DECIDED"

    await world.decide(other, proposal, decision="REJECTED", reason="Customer cancelled.")
    after = await snapshot(world, proposal["id"])
    late = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.admin,
    )
    assert late.code == "NOT_AWAITING_APPROVAL"
    assert await snapshot(world, proposal["id"]) == after


async def test_the_proposer_may_not_approve_its_own_proposal(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    data = await gql(
        PROPOSE,
        {
            "input": {
                "targetId": world.target_id,
                "actionCode": "refund.create",
                "operationKey": "own",
                "payload": {"amount": 5, "currency": "EUR"},
            }
        },
        world.admin,
    )
    proposal, task = data["proposeAction"]["proposal"], data["proposeAction"]["task"]
    error = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposal["id"],
                "decision": "APPROVED",
                "payloadDigest": proposal["payloadDigest"],
            }
        },
        world.admin,
    )
    assert error.code == "SELF_APPROVAL_FORBIDDEN"
    claim = await gql.error(CLAIM, {"id": task["id"]}, world.admin)
    assert claim.code == "SELF_APPROVAL_FORBIDDEN"


async def test_claims_are_refused_when_held_or_finished(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    proposed = await world.propose()
    task_id = proposed["task"]["id"]
    first, second = world.reviewers
    await gql(CLAIM, {"id": task_id}, first)
    held = await gql.error(CLAIM, {"id": task_id}, second)
    assert held.code == "TASK_CLAIMED_BY_OTHER"
    decide_held = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": proposed["proposal"]["id"],
                "decision": "APPROVED",
                "payloadDigest": proposed["proposal"]["payloadDigest"],
            }
        },
        second,
    )
    assert decide_held.code == "TASK_CLAIMED_BY_OTHER"
    release = await gql.error(
        "mutation($id: ID!) { releaseTask(input: {taskId: $id}) { id } }", {"id": task_id}, second
    )
    assert release.code == "TASK_NOT_CLAIMED"
    await world.decide(first, proposed["proposal"])
    finished = await gql.error(CLAIM, {"id": task_id}, second)
    assert finished.code == "TASK_NOT_CLAIMABLE"


async def test_a_response_breaking_the_task_schema_is_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    task = (
        await gql(
            """mutation($input: CreateTaskInput!) { createTask(input: $input) { id } }""",
            {
                "input": {
                    "queueId": world.queue_id,
                    "kind": "review",
                    "title": "Check it",
                    "responseSchema": {"type": "object", "required": ["verdict"]},
                }
            },
            world.agent,
        )
    )["createTask"]
    error = await gql.error(
        COMPLETE, {"input": {"taskId": task["id"], "response": {}}}, world.reviewers[0]
    )
    assert error.code == "RESPONSE_INVALID"
    assert error.errors[0]["extensions"]["errors"][0]["pointer"] == ""
    state = await gql(
        "query($id: ID!) { task(id: $id) { state response } }", {"id": task["id"]}, world.admin
    )
    assert state["task"] == {"state": "OPEN", "response": None}


async def test_an_idempotency_key_reused_with_other_input_is_refused(gql: GraphQLClient) -> None:
    world = await build_world(gql, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal, idempotencyKey="decision-1")
    other = (await world.propose())["proposal"]
    error = await gql.error(
        DECIDE,
        {
            "input": {
                "proposalId": other["id"],
                "decision": "APPROVED",
                "idempotencyKey": "decision-1",
                "payloadDigest": other["payloadDigest"],
            }
        },
        world.reviewers[0],
    )
    assert error.code == "IDEMPOTENCY_KEY_REUSED"
    state = await gql(
        "query($id: ID!) { proposal(id: $id) { approvalCount } }", {"id": other["id"]}, world.admin
    )
    assert state["proposal"]["approvalCount"] == 0


async def test_a_malformed_query_has_a_code(gql: GraphQLClient) -> None:
    admin = await gql.token(Role.ADMIN)
    error = await gql.error("{ noSuchField }", token=admin)
    assert error.code == "GRAPHQL_VALIDATION_FAILED"


async def test_signing_secrets_are_sealed_at_rest(gql: GraphQLClient) -> None:
    from sqlmodel import select

    from signoff.models import Target

    world = await build_world(gql)
    async with gql.sessionmaker() as session:
        stored = (await session.exec(select(Target.signing_secret))).one()
    assert world.signing_secret.startswith("whsec_")
    assert stored.startswith("sealed:v1:") and world.signing_secret not in stored
    listed = await gql("{ targets { id } }", token=world.admin)
    assert "whsec_" not in str(listed)
