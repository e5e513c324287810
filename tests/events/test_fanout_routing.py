"""The fanout routes a change to the subscribers of its proposal by one lookup, and offers
every subscriber exactly what offering each change to all of them would."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from signoff.events.hub import Change, Fanout, Subscriber
from signoff.models import ChangeKind
from signoff.models.change_event import ACCESS_KINDS
from signoff.resolvers.feed.subscriptions import FeedScope, concerns_access_of

PROPOSALS = [f"p{n}" for n in range(6)]
QUEUES = ["q1", "q2"]
ACTORS = ["a1", "a2", "a3"]
KINDS = [ChangeKind.PROPOSAL_PROPOSED.value, ChangeKind.TASK_CREATED.value, *sorted(ACCESS_KINDS)]


async def _nothing(after: int, through: int | None) -> list[Change]:
    return []


def _change(rng: random.Random, cursor: int) -> Change:
    kind = rng.choice(KINDS)
    if kind in ACCESS_KINDS:
        entity_type, entity_id = "actor", rng.choice(ACTORS)
    else:
        entity_type, entity_id = rng.choice(["proposal", "incident"]), f"e{cursor}"
    return Change(
        cursor=cursor,
        kind=kind,
        entity_type=entity_type,
        entity_id=entity_id,
        queue_id=rng.choice([None, *QUEUES]),
        proposal_id=rng.choice([None, *PROPOSALS]),
        actor_id=None,
        occurred_at=datetime.now(UTC),
        session_key=rng.choice([None, "a1:s"]),
    )


def _scope(rng: random.Random) -> FeedScope:
    return rng.choice(
        [
            FeedScope(proposal_id=rng.choice(PROPOSALS)),
            FeedScope(queue_id=rng.choice(QUEUES)),
            FeedScope(all_queues=True),
            FeedScope(entity_type="incident"),
            FeedScope(session_key="a1:s"),
        ]
    )


def _wants(scope: FeedScope, actor: str, change: Change) -> bool:
    """What a broadcast group wants: its scope's changes and its members' access changes."""
    return scope.matches(change) or concerns_access_of(change, {actor})


async def test_every_subscriber_gets_what_a_scan_of_all_of_them_would_give() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        fanout = Fanout(_nothing)
        subscribers: list[tuple[Subscriber, FeedScope, str]] = []
        for _ in range(rng.randint(1, 40)):
            scope, actor = _scope(rng), rng.choice(ACTORS)
            match = lambda c, s=scope, a=actor: _wants(s, a, c)  # noqa: E731
            subscriber = Subscriber(match, buffer=1_000, proposal_id=scope.only_proposal)
            fanout.add(subscriber)
            subscribers.append((subscriber, scope, actor))
        changes = [_change(rng, cursor) for cursor in range(1, 201)]
        await fanout.offer(changes)
        for subscriber, scope, actor in subscribers:
            got = []
            while subscriber._queue.qsize():
                got.append((await subscriber.get()).cursor)
            assert got == [c.cursor for c in changes if _wants(scope, actor, c)], (seed, scope)


async def test_a_change_to_one_proposal_asks_none_of_the_other_proposals_subscribers() -> None:
    asked: list[str] = []
    fanout = Fanout(_nothing)
    waiters = {}
    for n in range(1_000):
        proposal = f"p{n}"
        scope = FeedScope(proposal_id=proposal)

        def match(change: Change, scope: FeedScope = scope) -> bool:
            asked.append(scope.proposal_id or "")
            return scope.matches(change)

        waiters[proposal] = Subscriber(match, buffer=10, proposal_id=scope.only_proposal)
        fanout.add(waiters[proposal])
    rng = random.Random(1)
    change = _change(rng, 1)
    change = Change(
        **{**vars(change), "kind": ChangeKind.PROPOSAL_REJECTED.value, "proposal_id": "p7"}
    )
    await fanout.offer([change])
    assert asked == ["p7"]
    assert (await waiters["p7"].get()).cursor == 1
    fanout.discard(waiters["p7"])
    assert fanout.subscriber_count == 999
    await fanout.offer([Change(**{**vars(change), "cursor": 2})])
    assert asked == ["p7"]


def test_only_a_proposal_scope_is_routed_by_its_proposal() -> None:
    assert FeedScope(proposal_id="p").only_proposal == "p"
    assert FeedScope(queue_id="q").only_proposal is None
    assert FeedScope(all_queues=True).only_proposal is None
    assert FeedScope(entity_type="incident").only_proposal is None
    assert FeedScope(session_key="a:s", proposal_id="p").only_proposal is None
