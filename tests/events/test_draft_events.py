"""draftEvents: a person's screen follows its own drafts of one session, and resumes
without a gap."""

from __future__ import annotations

import pytest

from signoff.models import Role
from signoff.resolvers.feed.subscriptions import decode_cursor
from tests.helpers import GraphQLClient
from tests.live import InProcessServer, Subscription, feed_settled, head_cursor
from tests.schema.test_drafts import cast_of

DRAFT_EVENTS = """
subscription($s: String!, $after: String) {
  draftEvents(sessionId: $s, after: $after) {
    cursor kind entityId snapshot draft { id revision values sessionId accountId }
  }
}
"""


async def test_a_viewer_sees_only_its_own_drafts_of_the_session(
    live: InProcessServer, http: GraphQLClient
) -> None:
    cast = await cast_of(http)
    await feed_settled(http.sessionmaker)
    after = await head_cursor(http, cast.person)
    mine = Subscription(live.ws_url, cast.person, DRAFT_EVENTS, {"s": "s-1", "after": after})
    # Another person, subscribed to the same session id, and an admin: their own drafts only.
    theirs = Subscription(live.ws_url, cast.other, DRAFT_EVENTS, {"s": "s-1", "after": after})
    admin = await http.token(Role.ADMIN)
    staff = Subscription(live.ws_url, admin, DRAFT_EVENTS, {"s": "s-1", "after": after})
    async with mine, theirs, staff:
        draft = (await cast.prepare(cast.form("1"), {"amount": 1}))["draft"]
        await cast.prepare(cast.form("2"), session="s-2")  # the person's other session
        edited = await cast.update(draft, cast.person, "USER", patch={"amount": 2})
        assert not edited.get("errors"), edited
        events = await mine.wait_for(2)
        assert await mine.quiet(0.5) == events
        assert await theirs.quiet(0.1) == [] and await staff.quiet(0.1) == []
    assert [e["kind"] for e in events] == ["draft.prepared", "draft.updated"]
    assert {e["entityId"] for e in events} == {draft["id"]}
    # The frame's draft is read when it is rendered: as it is now, values included.
    assert events[1]["draft"]["values"] == {"amount": 2}
    assert events[1]["draft"]["accountId"] == cast.person_id
    assert events[1]["snapshot"]["sessionId"] == "s-1"


async def test_resuming_after_a_cursor_misses_nothing_and_repeats_nothing(
    live: InProcessServer, http: GraphQLClient
) -> None:
    cast = await cast_of(http)
    await feed_settled(http.sessionmaker)
    start = await head_cursor(http, cast.person)
    draft = (await cast.prepare(cast.form(), {"amount": 1}))["draft"]
    async with Subscription(
        live.ws_url, cast.person, DRAFT_EVENTS, {"s": "s-1", "after": start}
    ) as first:
        revision = draft["revision"]
        for amount in (2, 3):
            body = await cast.update(
                draft, cast.agent, "AGENT", patch={"amount": amount}, revision=revision
            )
            assert not body.get("errors"), body
            revision += 1
        seen = await first.wait_for(3)
    resume_at = seen[1]["cursor"]  # the client only got two frames before it went away
    for amount in (4, 5):
        body = await cast.update(
            draft, cast.agent, "AGENT", patch={"amount": amount}, revision=revision
        )
        assert not body.get("errors"), body
        revision += 1
    async with Subscription(
        live.ws_url, cast.person, DRAFT_EVENTS, {"s": "s-1", "after": resume_at}
    ) as second:
        replayed = await second.wait_for(3)
        body = await cast.update(draft, cast.agent, "AGENT", patch={"amount": 6}, revision=revision)
        assert not body.get("errors"), body
        resumed = await second.wait_for(4)
        assert await second.quiet(0.3) == resumed
    assert replayed[0]["cursor"] == seen[2]["cursor"]
    cursors = [decode_cursor(e["cursor"]) for e in seen[:2] + resumed]
    assert cursors == sorted(set(cursors))
    assert [e["kind"] for e in resumed] == ["draft.updated"] * 4
    assert [e["snapshot"]["revision"] for e in resumed] == [3, 4, 5, 6]


async def test_an_over_long_session_id_is_refused(
    live: InProcessServer, http: GraphQLClient
) -> None:
    person = await http.token(Role.REVIEWER)
    sub = Subscription(live.ws_url, person, DRAFT_EVENTS, {"s": "x" * 201, "after": None})
    async with sub:
        with pytest.raises(AssertionError, match="VALIDATION"):
            await sub.wait_for(1, within=5)
