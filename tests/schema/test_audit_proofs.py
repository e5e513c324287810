"""Proofs over the API: the latest checkpoint, inclusion and consistency proofs, and a
proposal's decision receipt, each checked with the standalone verifier only."""

from __future__ import annotations

import copy
from typing import Any

from starlette.applications import Starlette

from signoff.database import SessionMaker
from signoff.events import feed
from signoff.evidence import verify
from signoff.models import Role
from tests.helpers import GraphQLClient, build_world

CHECKPOINT = """{ auditCheckpoint { size root issuedAt keyId signature previousSize
  consistency document } }"""
INCLUSION = """query($id: ID!, $size: Int) { auditInclusionProof(eventId: $id, treeSize: $size) {
  position treeSize leafHash entry proof } }"""
CONSISTENCY = """query($a: Int!, $b: Int!) { auditConsistencyProof(from: $a, to: $b) {
  from to proof } }"""
EVENTS = "{ auditEvents(first: 100) { edges { node { id } } } }"
PROPOSAL_RECEIPT = "query($id: ID!) { proposal(id: $id) { decisionReceipt } }"


async def _checkpoint(app: Starlette, sessionmaker: SessionMaker) -> None:
    """Stamp what waits (PostgreSQL stamps after commit) and sign a checkpoint now."""
    async with sessionmaker() as session:
        await feed.stamp_pending(session)
        await session.commit()
    assert await app.state.events.checkpoint(force=True) is not None


async def test_checkpoints_and_proofs_verify_offline(
    gql: GraphQLClient, app: Starlette, sessionmaker: SessionMaker, client: Any
) -> None:
    world = await build_world(gql)
    key = verify.load_public_key((await client.get("/.well-known/signoff-audit-key")).text)
    assert (await gql(CHECKPOINT, {}, world.admin))["auditCheckpoint"] is None
    await _checkpoint(app, sessionmaker)
    first = (await gql(CHECKPOINT, {}, world.agent))["auditCheckpoint"]
    assert verify.verify_checkpoint(first["document"], key)
    proposal = (await world.propose())["proposal"]
    await world.decide(world.reviewers[0], proposal)
    operator = await gql.token(Role.OPERATOR)
    await _checkpoint(app, sessionmaker)
    second = (await gql(CHECKPOINT, {}, world.agent))["auditCheckpoint"]
    assert verify.verify_checkpoint(second["document"], key)
    root = bytes.fromhex(second["root"])
    # Each checkpoint proves it extends the previous one.
    assert second["previousSize"] == first["size"]
    assert verify.verify_consistency(
        first["size"],
        second["size"],
        bytes.fromhex(first["root"]),
        root,
        [bytes.fromhex(h) for h in second["consistency"]],
    )
    asked = (await gql(CONSISTENCY, {"a": first["size"], "b": second["size"]}, world.agent))[
        "auditConsistencyProof"
    ]
    assert asked["proof"] == second["consistency"]
    ids = [e["node"]["id"] for e in (await gql(EVENTS, {}, operator))["auditEvents"]["edges"]]
    assert len(ids) == second["size"]
    for event_id in ids:
        found = (await gql(INCLUSION, {"id": event_id}, operator))["auditInclusionProof"]
        assert found["treeSize"] == second["size"]
        assert found["entry"]["id"] == event_id
        assert verify.verify_inclusion(
            found["position"],
            found["treeSize"],
            verify.entry_hash(found["entry"]),
            [bytes.fromhex(h) for h in found["proof"]],
            root,
        )
    # A receipt proven against a checkpoint the auditor holds: the older one has none of
    # the proposal's records yet, the newer one all.
    sized = "query($id: ID!, $n: Int) { proposal(id: $id) { decisionReceipt(checkpointSize: $n) } }"
    for size, proven in ((first["size"], False), (second["size"], True)):
        receipt = (await gql(sized, {"id": proposal["id"], "n": size}, world.agent))["proposal"][
            "decisionReceipt"
        ]
        assert receipt["checkpoint"]["size"] == size
        assert bool(receipt["records"]) is proven
        assert bool(receipt["notYetCheckpointed"]) is not proven
        assert verify.verify_receipt(receipt, key).ok is proven
    unsigned = await gql.error(sized, {"id": proposal["id"], "n": 1}, world.agent)
    assert unsigned.code == "AUDIT_PROOF_UNAVAILABLE"
    refused = await gql.error(INCLUSION, {"id": ids[0]}, world.agent)
    assert refused.code == "FORBIDDEN"
    outside = await gql.error(INCLUSION, {"id": ids[-1], "size": 10_000}, operator)
    assert outside.code == "AUDIT_PROOF_UNAVAILABLE"


async def test_a_decision_receipt_verifies_offline_and_a_doctored_one_does_not(
    gql: GraphQLClient, app: Starlette, sessionmaker: SessionMaker, client: Any
) -> None:
    world = await build_world(gql, required_approvals=2)
    proposal = (await world.propose())["proposal"]
    for reviewer in world.reviewers:
        await world.decide(reviewer, proposal)
    await _checkpoint(app, sessionmaker)
    receipt = (await gql(PROPOSAL_RECEIPT, {"id": proposal["id"]}, world.agent))["proposal"][
        "decisionReceipt"
    ]
    key = verify.load_public_key((await client.get("/.well-known/signoff-audit-key")).text)
    verdict = verify.verify_receipt(receipt, key)
    assert verdict.ok, verdict.summary()
    assert receipt["proposal"]["digest"] == proposal["payloadDigest"]
    assert [a["decision"] for a in receipt["approvals"]] == ["APPROVED", "APPROVED"]
    assert receipt["delivery"]["state"] == "QUEUED"
    assert receipt["notYetCheckpointed"] == []
    actions = [r["entry"]["action"] for r in receipt["records"]]
    assert actions.count("approval.approved") == 2 and "proposal.proposed" in actions
    # An approval no proven record backs, and a record altered after the fact, both fail.
    claimed = copy.deepcopy(receipt)
    claimed["approvals"][0]["digest"] = "sha256:" + "0" * 64
    assert not verify.verify_receipt(claimed, key).ok
    altered = copy.deepcopy(receipt)
    altered["records"][0]["entry"]["details"]["payload_digest"] = "sha256:" + "0" * 64
    assert not verify.verify_receipt(altered, key).ok
