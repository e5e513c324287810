"""Handing a task to another reviewer (``reassignTask``) and delegating while away
(``setDelegate``), docs/design.md section 5.5."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from sqlmodel import col, select

from signoff import clock
from signoff.models import AuditEvent, HumanTask, Role
from tests.concurrency.test_races import codes_of
from tests.helpers import CLAIM, COMPLETE, GraphQLClient, World, build_world
from tests.schema.test_approval_links import switch_off

REASSIGN = """
mutation($input: ReassignTaskInput!) {
  reassignTask(input: $input) {
    delegated offeredTo { name }
    task { id state claimExpiresAt assignee { name } }
  }
}
"""
SET_DELEGATE = """
mutation($input: SetDelegateInput!) {
  setDelegate(input: $input) { id startsAt endsAt delegate { name } }
}
"""
CLEAR_DELEGATE = "mutation { clearDelegate }"
ME = "query { viewer { actor { id name } } }"


async def actor_id(gql: GraphQLClient, token: str) -> str:
    return str((await gql(ME, token=token))["viewer"]["actor"]["id"])


async def member(gql: GraphQLClient, world: World, name: str) -> tuple[str, str]:
    """Another reviewer of the world's queue: (token, actor id)."""
    token = await gql.token(Role.REVIEWER, name=name, queues=[world.queue_slug])
    return token, await actor_id(gql, token)


def reassign(task_id: str, assignee_id: str, **extra: Any) -> dict[str, Any]:
    return {"input": {"taskId": task_id, "assigneeId": assignee_id, **extra}}


async def claimed_task(world: World, **propose: Any) -> dict[str, Any]:
    """A claimed approval task, with the digest its reviewers were shown."""
    proposed = await world.propose(**propose)
    task: dict[str, Any] = {**proposed["task"], "digest": proposed["proposal"]["payloadDigest"]}
    await world.gql(CLAIM, {"id": task["id"]}, world.reviewers[0])
    return task


async def task_row(gql: GraphQLClient, task_id: str) -> HumanTask:
    async with gql.sessionmaker() as session:
        task = await session.get(HumanTask, task_id)
        assert task is not None
        return task


async def audits(gql: GraphQLClient, task_id: str) -> list[tuple[str, dict[str, Any]]]:
    async with gql.sessionmaker() as session:
        rows = await session.exec(
            select(AuditEvent.action, AuditEvent.details)
            .where(AuditEvent.target_id == task_id)
            .order_by(col(AuditEvent.created_at), col(AuditEvent.id))
        )
        return [(action, details) for action, details in rows.all()]


async def test_the_holder_hands_a_task_to_another_reviewer_who_may_decide_it(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    task = await claimed_task(world)
    carol, carol_id = await member(gql, world, "carol")
    handed = (
        await gql(
            REASSIGN,
            reassign(task["id"], carol_id, reason="carol knows this customer"),
            world.reviewers[0],
        )
    )["reassignTask"]
    assert handed["delegated"] is False
    assert handed["offeredTo"] == {"name": "carol"}
    assert handed["task"]["state"] == "CLAIMED"
    assert handed["task"]["assignee"] == {"name": "carol"}
    action, details = (await audits(gql, task["id"]))[-1]
    assert action == "task.reassigned"
    assert (details["to"], details["offered_to"], details["reason"]) == (
        carol_id,
        carol_id,
        "carol knows this customer",
    )
    # The former holder no longer holds it; carol completes it.
    refused = await gql.error(REASSIGN, reassign(task["id"], carol_id), world.reviewers[0])
    assert refused.code == "TASK_NOT_CLAIMED"
    done = await gql(
        COMPLETE,
        {
            "input": {
                "taskId": task["id"],
                "response": {"decision": "APPROVED", "payloadDigest": task["digest"]},
            }
        },
        carol,
    )
    assert done["completeTask"]["task"]["state"] == "COMPLETED"


async def test_handing_on_is_refused_without_a_live_claim_or_to_someone_ineligible(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql, required_approvals=2)
    proposal_task = await world.propose()
    task, proposal = proposal_task["task"], proposal_task["proposal"]
    _, carol_id = await member(gql, world, "carol")
    not_held = await gql.error(REASSIGN, reassign(task["id"], carol_id), world.reviewers[0])
    assert not_held.code == "TASK_NOT_CLAIMED"

    await world.decide(world.reviewers[1], proposal)  # one of two approvals
    await gql(CLAIM, {"id": task["id"]}, world.reviewers[0])
    before = await task_row(gql, task["id"])
    outsider = await gql.token(Role.REVIEWER, name="outsider", queues=[])
    ineligible = {
        "someone outside the queue": await actor_id(gql, outsider),
        "the proposer": await actor_id(gql, world.agent),
        "one who already decided": await actor_id(gql, world.reviewers[1]),
        "the holder": await actor_id(gql, world.reviewers[0]),
    }
    for who, assignee in ineligible.items():
        refused = await gql.error(REASSIGN, reassign(task["id"], assignee), world.reviewers[0])
        assert refused.code == "ASSIGNEE_NOT_ELIGIBLE", who
    after = await task_row(gql, task["id"])
    assert (after.version, after.assignee_id) == (before.version, before.assignee_id)

    frozen_clock.advance(15 * 60)  # the claim lapsed: no longer the holder's to hand on
    lapsed = await gql.error(REASSIGN, reassign(task["id"], carol_id), world.reviewers[0])
    assert lapsed.code == "TASK_NOT_CLAIMED"
    # An operator may hand any waiting task on.
    handed = await gql(REASSIGN, reassign(task["id"], carol_id), world.admin)
    assert handed["reassignTask"]["task"]["assignee"] == {"name": "carol"}


async def test_a_task_offered_to_a_reviewer_away_goes_to_their_delegate(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    bob, bob_id = await member(gql, world, "bob")
    _, dana_id = await member(gql, world, "dana")
    until = frozen_clock.current + timedelta(days=7)
    made = (
        await gql(
            SET_DELEGATE, {"input": {"delegateId": dana_id, "endsAt": until.isoformat()}}, bob
        )
    )["setDelegate"]
    assert made["delegate"] == {"name": "dana"}

    task = await claimed_task(world)
    handed = (await gql(REASSIGN, reassign(task["id"], bob_id), world.reviewers[0]))["reassignTask"]
    assert handed["delegated"] is True
    assert handed["offeredTo"] == {"name": "bob"}
    assert handed["task"]["assignee"] == {"name": "dana"}
    action, details = (await audits(gql, task["id"]))[-1]
    assert action == "task.delegated"
    assert (details["to"], details["offered_to"]) == (dana_id, bob_id)

    frozen_clock.advance(7 * 86400)  # back from leave
    later = await claimed_task(world)
    back = (await gql(REASSIGN, reassign(later["id"], bob_id), world.reviewers[0]))["reassignTask"]
    assert (back["delegated"], back["task"]["assignee"]) == (False, {"name": "bob"})


async def test_a_delegate_outside_the_queue_is_skipped_and_clearing_ends_it(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock
) -> None:
    world = await build_world(gql)
    bob, bob_id = await member(gql, world, "bob")
    stranger = await gql.token(Role.REVIEWER, name="stranger", queues=[])
    until = (frozen_clock.current + timedelta(days=1)).isoformat()
    await gql(
        SET_DELEGATE,
        {"input": {"delegateId": await actor_id(gql, stranger), "endsAt": until}},
        bob,
    )
    task = await claimed_task(world)
    kept = (await gql(REASSIGN, reassign(task["id"], bob_id), world.reviewers[0]))["reassignTask"]
    assert (kept["delegated"], kept["task"]["assignee"]) == (False, {"name": "bob"})

    assert (await gql(CLEAR_DELEGATE, token=bob))["clearDelegate"] is True
    assert (await gql(CLEAR_DELEGATE, token=bob))["clearDelegate"] is False
    assert [a for a, _ in await audits(gql, bob_id)][-2:] == [
        "actor.delegate_set",
        "actor.delegate_cleared",
    ]


async def test_a_delegation_is_checked(gql: GraphQLClient, frozen_clock: clock.FrozenClock) -> None:
    world = await build_world(gql)
    bob, bob_id = await member(gql, world, "bob")
    _, dana_id = await member(gql, world, "dana")
    now = frozen_clock.current
    cases = [
        (bob, bob_id, now + timedelta(days=1), "VALIDATION_FAILED"),
        (bob, dana_id, now - timedelta(seconds=1), "VALIDATION_FAILED"),
        (bob, dana_id, now + timedelta(days=91), "VALIDATION_FAILED"),
        (bob, await actor_id(gql, world.agent), now + timedelta(days=1), "ASSIGNEE_NOT_ELIGIBLE"),
        (world.agent, dana_id, now + timedelta(days=1), "FORBIDDEN"),
    ]
    for token, delegate, ends, code in cases:
        refused = await gql.error(
            SET_DELEGATE, {"input": {"delegateId": delegate, "endsAt": ends.isoformat()}}, token
        )
        assert refused.code == code, (delegate, ends)


async def test_concurrent_hand_ons_and_a_decision_one_wins(gql: GraphQLClient) -> None:
    world = await build_world(gql)
    others = [await member(gql, world, f"racer-{i}") for i in range(4)]
    for _ in range(3):
        task = await claimed_task(world)
        calls = [
            (REASSIGN, reassign(task["id"], racer_id), world.reviewers[0]) for _, racer_id in others
        ]
        calls.append(
            (
                COMPLETE,
                {
                    "input": {
                        "taskId": task["id"],
                        "response": {"decision": "APPROVED", "payloadDigest": task["digest"]},
                    }
                },
                world.reviewers[0],
            )
        )
        outcome = await codes_of(gql, calls)
        assert outcome["ok"] == 1, outcome
        assert set(outcome) <= {"ok", "TASK_NOT_CLAIMED", "TASK_CLAIMED_BY_OTHER"}, outcome
        moved = [a for a, _ in await audits(gql, task["id"])]
        won = Counter(a for a in moved if a in ("task.reassigned", "task.completed"))
        assert sum(won.values()) == 1, moved


@pytest.mark.parametrize("how", ["disabled", "revoked"])
async def test_work_is_never_handed_to_someone_who_may_not_decide(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock, how: str
) -> None:
    """Reassigning to, or naming as delegate, a reviewer disabled or with every token
    revoked is refused, as is an admin (never a member of a queue) as delegate or holder;
    the task stays where it was."""
    world = await build_world(gql)
    bob, _ = await member(gql, world, "bob")
    _, gone_id = await member(gql, world, "gone")
    await switch_off(gql, "gone", how)
    admin_id = await actor_id(gql, world.admin)
    task = await claimed_task(world)
    before = await task_row(gql, task["id"])
    refused = await gql.error(REASSIGN, reassign(task["id"], gone_id), world.reviewers[0])
    assert refused.code == "ASSIGNEE_NOT_ELIGIBLE" and "gone" in refused.errors[0]["message"]
    by_operator = await gql.error(REASSIGN, reassign(task["id"], admin_id), world.admin)
    assert by_operator.code == "ASSIGNEE_NOT_ELIGIBLE"
    until = (frozen_clock.current + timedelta(days=1)).isoformat()
    for delegate in (gone_id, admin_id):
        named = await gql.error(
            SET_DELEGATE, {"input": {"delegateId": delegate, "endsAt": until}}, bob
        )
        assert named.code == "ASSIGNEE_NOT_ELIGIBLE", delegate
    after = await task_row(gql, task["id"])
    assert (after.version, after.assignee_id) == (before.version, before.assignee_id)
    other = (await world.propose())["task"]
    admin_claim = await gql.error(CLAIM, {"id": other["id"]}, world.admin)
    assert admin_claim.code == "ASSIGNEE_NOT_ELIGIBLE"


@pytest.mark.parametrize("how", ["disabled", "revoked"])
async def test_a_delegate_who_may_no_longer_decide_is_skipped(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock, how: str
) -> None:
    world = await build_world(gql)
    bob, bob_id = await member(gql, world, "bob")
    _, dana_id = await member(gql, world, "dana")
    until = (frozen_clock.current + timedelta(days=7)).isoformat()
    await gql(SET_DELEGATE, {"input": {"delegateId": dana_id, "endsAt": until}}, bob)
    await switch_off(gql, "dana", how)
    task = await claimed_task(world)
    handed = (await gql(REASSIGN, reassign(task["id"], bob_id), world.reviewers[0]))["reassignTask"]
    assert (handed["delegated"], handed["task"]["assignee"]) == (False, {"name": "bob"})


@pytest.mark.parametrize("how", ["disabled", "revoked"])
async def test_a_holder_who_loses_access_gives_their_claims_back_at_once(
    gql: GraphQLClient, frozen_clock: clock.FrozenClock, how: str
) -> None:
    """Not held for the rest of the lease: the task is open for the next reviewer."""
    world = await build_world(gql)
    task = await claimed_task(world)
    await switch_off(gql, "reviewer-0", how)
    released = await task_row(gql, task["id"])
    assert (released.state, released.assignee_id) == ("OPEN", None)
    claimed = (await gql(CLAIM, {"id": task["id"]}, world.reviewers[1]))["claimTask"]
    assert claimed["assignee"]["name"] == "reviewer-1"
    _, details = [a for a in await audits(gql, task["id"]) if a[0] == "task.released"][-1]
    assert details["reason"] == ("actor_disabled" if how == "disabled" else "tokens_revoked")
