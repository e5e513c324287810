"""Deciding from Slack (docs/design.md section 5.6, docs/slack.md): a button click or the
Reject modal's submission, made by a Slack user, decided as their Signoff actor
(``slack_users.slack_actor_id``: an admin's link, or the verified email they signed in
with), through the same rule as ``decideProposal`` (four eyes, quorum, membership now,
the deadline, one decision per reviewer) and on the digest the message showed. Each
refusal is answered in words to the one who clicked.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import ActorDisabled, NotFound, SignoffError, ValidationFailed
from signoff.models import Actor, Decision
from signoff.resolvers.access.rules import Viewer
from signoff.resolvers.approval.approvals import DecideResult, decide_proposal
from signoff.resolvers.core.transitions import Happening, record
from signoff.resolvers.core.work import UnitOfWork
from signoff.resolvers.reach.link_minting import reviewer_as_now
from signoff.resolvers.reach.slack_messages import ButtonValue
from signoff.resolvers.reach.slack_users import SLACK_USER_ID

# What the one who clicked reads, by refusal code; any other code: the error's own message.
REFUSALS = {
    "FORBIDDEN": "You may not decide this proposal: you are not a reviewer of its queue now.",
    "SELF_APPROVAL_FORBIDDEN": "You proposed this action; another reviewer must decide it.",
    "ALREADY_DECIDED": "You have already decided this proposal.",
    "NOT_AWAITING_APPROVAL": "This proposal no longer waits for approval: it was decided, "
    "expired or cancelled. The message shows where it stands.",
    "PAYLOAD_DIGEST_MISMATCH": "This proposal was amended after the message you clicked was "
    "posted, so nothing was decided. The message now shows the new revision: review it "
    "and decide again.",
    "TASK_CLAIMED_BY_OTHER": "Another reviewer has claimed this approval task; it is theirs "
    "to decide while their claim lasts.",
    "NOT_FOUND": "This proposal does not exist, or you may not see it.",
}


def refusal_words(refused: SignoffError) -> str:
    """The ephemeral answer to a refused click."""
    if isinstance(refused, ActorDisabled):
        return "Your Signoff account is disabled; an operator can enable it."
    return REFUSALS.get(refused.code, refused.message)


async def slack_reviewer(session: AsyncSession, actor_id: str) -> Viewer:
    """A Slack user's actor, with their queue memberships as they are now."""
    actor = await session.get(Actor, actor_id)
    if actor is None:
        raise NotFound("That Signoff account no longer exists.")
    if actor.disabled_at is not None:
        raise ActorDisabled()
    return await reviewer_as_now(session, actor.id)


async def decide_from_slack(
    *,
    work: UnitOfWork,
    actor_id: str,
    shown: ButtonValue,
    decision: Decision,
    reason: str | None = None,
) -> DecideResult:
    """Decide, as the Slack user's actor, the digest the message showed."""
    viewer = await slack_reviewer(work.session, actor_id)
    return await decide_proposal(
        work=work,
        viewer=viewer,
        proposal_id=shown.proposal_id,
        decision=decision,
        payload_digest=shown.payload_digest,
        reason=reason,
    )


@dataclass(frozen=True)
class SlackLink:
    actor: Actor
    before: str | None  # the Slack user linked before, if any


async def link_slack_user(*, work: UnitOfWork, name: str, slack_user_id: str) -> SlackLink:
    """Link a Slack user to an actor (an admin, from the command line): their clicks then
    decide as that actor. A Slack user decides as one actor at most."""
    slack_user_id = slack_user_id.strip()
    if not SLACK_USER_ID.fullmatch(slack_user_id):
        raise ValidationFailed("A Slack user id looks like U0123456789.", field="slackUser")
    actor = (await work.session.exec(select(Actor).where(Actor.name == name.strip()))).first()
    if actor is None:
        raise ValidationFailed(f"No actor is named {name.strip()}.", field="name")
    before = actor.slack_user_id
    actor.slack_user_id = slack_user_id
    try:
        await work.session.flush()
    except IntegrityError:
        await work.rollback()
        raise ValidationFailed(
            "That Slack user is linked to another actor already.", field="slackUser"
        ) from None
    record(
        work,
        Happening(
            entity_type="actor",
            entity_id=actor.id,
            actor_id=None,
            action="actor.slack_linked",
            details={"slack_user_id": slack_user_id, "before": before},
        ),
    )
    await work.commit()
    return SlackLink(actor=actor, before=before)
