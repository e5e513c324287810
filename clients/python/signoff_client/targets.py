"""The target an agent needs, stated by the agent's own code and registered by it.

An agent's token may not register targets, so registering stays a step an admin runs
(``register_target`` with an admin's token, once: a target of that name that is as needed
is used as it is); the agent, run with its own token, checks first that its target is
there and as it needs (``require_target``), and otherwise stops saying what it needs and
how to get it, instead of proposing to a target whose policy would decide differently
(the worked example's ``refunds`` approves small refunds with no person).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from signoff_client.client import AsyncSignoff, Target
from signoff_client.errors import Forbidden, SignoffError

QUEUES = "query { queues { id slug } }"
REGISTER = """mutation($input: RegisterTargetInput!) {
  registerTarget(input: $input) { target { id name } signingSecret }
}"""


class TargetNotReady(SignoffError):
    """The agent's target is missing, or not as the agent needs it."""

    code = "TARGET_NOT_READY"


@dataclass(frozen=True)
class TargetNeeds:
    """What an agent needs of its target: the payload's JSON Schema, one reviewer (or
    ``required_approvals``) deciding every proposal with no approval policy, amendments,
    whether the agent accepts them before they count, and who acts on an approval (Signoff
    delivering to a URL, or the agent executing it itself)."""

    input_schema: dict[str, Any]
    required_approvals: int = 1
    amendable: bool = True
    amendments_need_proposer: bool = True
    agent_executes: bool = False

    def describe(self) -> str:
        """These needs in words, for a person setting the target up."""
        who = "the agent executes approved proposals itself (no url)"
        if not self.agent_executes:
            who = "Signoff delivers approved proposals to a url"
        amend = "not amendable"
        if self.amendable:
            amend = "amendable, " + (
                "the agent accepting an amendment before it is decided"
                if self.amendments_need_proposer
                else "an amendment decided as amended"
            )
        return (
            f"{self.required_approvals} approval(s) for every proposal (no approval policy), "
            f"{amend}; {who}"
        )

    def differences(self, target: Target) -> list[str]:
        """How an existing target differs from these needs (nothing: it will do)."""
        wanted: dict[str, tuple[Any, Any]] = {
            "requiredApprovals": (target.required_approvals, self.required_approvals),
            "approvalPolicy": (target.approval_policy, None),
            "amendable": (target.amendable, self.amendable),
            "agentExecutes": (target.agent_executes, self.agent_executes),
            "active": (target.active, True),
        }
        if self.amendable:
            wanted["amendmentsNeedProposer"] = (
                target.amendments_need_proposer,
                self.amendments_need_proposer,
            )
        return [
            f"{field} is {has!r}, not {needed!r}"
            for field, (has, needed) in wanted.items()
            if has != needed
        ]


@dataclass(frozen=True)
class Registered:
    """What ``register_target`` did: found the target, or registered it."""

    name: str
    created: bool
    signing_secret: str | None = None

    def line(self) -> str:
        """One line saying so (with the signing secret a receiver checks, when new)."""
        if not self.created:
            return f"{self.name}: already registered"
        if self.signing_secret:
            return f"{self.name}: registered, signing secret {self.signing_secret}"
        return f"{self.name}: registered"


async def register_target(
    signoff: AsyncSignoff,
    name: str,
    needs: TargetNeeds,
    *,
    queue: str | None,
    url: str | None = None,
) -> Registered:
    """Register ``name`` as ``needs`` says, reviewed in the queue ``queue`` (its slug),
    delivering to ``url`` unless the agent executes it; ``signoff`` is an admin's client.
    A target of that name that is as needed is used as it is; one that differs is refused
    (``TargetNotReady``), not changed."""
    found = {target.name: target for target in await signoff.targets()}.get(name)
    if found is not None:
        differences = needs.differences(found)
        if differences:
            raise TargetNotReady(f"Target {name!r} exists but {'; '.join(differences)}.")
        return Registered(name, created=False)
    if (url is None) != needs.agent_executes:
        raise TargetNotReady(
            f"Target {name!r}: {needs.describe()}, so "
            + ("give no url." if needs.agent_executes else "give the url to deliver to.")
        )
    try:
        made = await create(signoff, name, needs, queue=queue, url=url)
    except Forbidden as refused:
        raise TargetNotReady(
            f"Registering {name!r} needs an admin's (or operator's) token, which this one is "
            f"not: {refused.message}"
        ) from refused
    return Registered(name, created=True, signing_secret=made["signingSecret"])


async def create(
    signoff: AsyncSignoff, name: str, needs: TargetNeeds, *, queue: str | None, url: str | None
) -> dict[str, Any]:
    """Register the target in the queue whose slug is ``queue``; registerTarget's answer."""
    queues = await graphql(signoff, QUEUES, {})
    queue_id = next((q["id"] for q in queues["queues"] if q["slug"] == queue), None)
    if queue_id is None:
        raise TargetNotReady(f"No queue {queue!r}: give the slug of the queue that reviews it.")
    settings: dict[str, Any] = {
        "name": name,
        "approvalMode": "HUMAN",
        "queueId": queue_id,
        "inputSchema": needs.input_schema,
        "requiredApprovals": needs.required_approvals,
        "amendable": needs.amendable,
        "amendmentsNeedProposer": needs.amendments_need_proposer,
    }
    if url is not None:
        settings["url"] = url
    made: dict[str, Any] = (await graphql(signoff, REGISTER, {"input": settings}))["registerTarget"]
    return made


async def require_target(signoff: AsyncSignoff, name: str, needs: TargetNeeds) -> Target:
    """The target ``name``, if it is there and as ``needs`` says; else ``TargetNotReady``
    saying what is needed (an admin registers it: the agent's token may not)."""
    found = {target.name: target for target in await signoff.targets()}.get(name)
    if found is None:
        raise TargetNotReady(
            f"No target {name!r}. It needs {needs.describe()}; an admin registers it "
            "first (this agent's `register` step, with an admin's token)."
        )
    differences = needs.differences(found)
    if differences:
        raise TargetNotReady(
            f"Target {name!r} is not as this agent needs: {'; '.join(differences)}."
        )
    return found


async def graphql(signoff: AsyncSignoff, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    """One operation the generated client does not name (an admin's), refusals typed."""
    return signoff.api.get_data(await signoff.api.execute(query, variables=variables))
