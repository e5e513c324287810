"""Approval policies: how many approvals a proposal needs, decided by its payload with rules
written as JSON Schema (docs/design.md section 4.19).

The first rule whose ``when`` the payload meets wins, else the default, else the target's
own settings. Rules are checked, and queue slugs resolved, when the target is registered,
so proposing never looks a queue up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmodel import select
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.constants import POLICY_MAX_RULES, REQUIRED_APPROVALS_MAX
from signoff.errors import NotFound, PolicyInvalid, SchemaInvalid
from signoff.jsonvalues import check_schema, require_object, require_size, schema_errors
from signoff.models import ApprovalMode, Queue, Role, Target
from signoff.resolvers.access.rules import Viewer, require_role

RULE_KEYS = frozenset({"when", "approvals", "queue", "name"})
DEFAULT_KEYS = frozenset({"approvals", "queue"})


@dataclass(frozen=True)
class PolicyMatch:
    """What a policy decided for one payload: the rule (``None``: the default), the
    approvals needed and the queue they are asked in."""

    rule: int | None
    name: str | None
    approvals: int
    queue_id: str | None

    def recorded(self) -> dict[str, Any]:
        """As the proposal and its audit record keep it."""
        return {
            "rule": self.rule,
            "name": self.name,
            "approvals": self.approvals,
            "queueId": self.queue_id,
        }


async def check_policy(
    session: AsyncSession,
    policy: Any,
    *,
    approval_mode: ApprovalMode,
    required_approvals: int,
    queue_id: str | None,
) -> dict[str, Any]:
    """The policy as stored (queues resolved to ids), or ``POLICY_INVALID`` naming where."""
    if not isinstance(policy, dict) or not set(policy) <= {"rules", "default"}:
        raise _invalid("", "a policy is an object with rules and an optional default")
    require_size(policy, "approvalPolicy")
    rules = policy.get("rules")
    if not isinstance(rules, list) or not 1 <= len(rules) <= POLICY_MAX_RULES:
        raise _invalid("/rules", f"rules must be a list of 1 to {POLICY_MAX_RULES} rules")
    stored_rules = [
        await _check_entry(session, rule, f"/rules/{index}", RULE_KEYS, queue_id)
        for index, rule in enumerate(rules)
    ]
    default = policy.get("default")
    if default is None:
        default = {
            "approvals": 0 if approval_mode is ApprovalMode.BOUNDED_AUTO else required_approvals
        }
    stored_default = await _check_entry(session, default, "/default", DEFAULT_KEYS, queue_id)
    return {"rules": stored_rules, "default": stored_default}


async def _check_entry(
    session: AsyncSession, entry: Any, pointer: str, keys: frozenset[str], queue_id: str | None
) -> dict[str, Any]:
    if not isinstance(entry, dict) or not set(entry) <= keys:
        raise _invalid(pointer, f"an object with only {', '.join(sorted(keys))}")
    stored = dict(entry)
    if "when" in keys:
        try:
            check_schema(entry.get("when"), "when")
        except SchemaInvalid as exc:
            raise _invalid(f"{pointer}/when", exc.message) from None
        name = entry.get("name")
        if name is not None and not (isinstance(name, str) and 1 <= len(name) <= 100):
            raise _invalid(f"{pointer}/name", "a name is 1 to 100 characters")
    approvals = entry.get("approvals")
    if (
        not isinstance(approvals, int)
        or isinstance(approvals, bool)
        or not 0 <= approvals <= REQUIRED_APPROVALS_MAX
    ):
        raise _invalid(
            f"{pointer}/approvals",
            f"approvals must be an integer from 0 to {REQUIRED_APPROVALS_MAX}",
        )
    slug = entry.get("queue")
    if slug is not None:
        queue = (
            (await session.exec(select(Queue).where(Queue.slug == slug))).first()
            if isinstance(slug, str)
            else None
        )
        if queue is None:
            raise _invalid(f"{pointer}/queue", f"no queue has the slug {slug!r}")
        stored["queueId"] = queue.id
    elif approvals > 0 and queue_id is None:
        raise _invalid(
            pointer, "approvals by people need a queue: name one, or give the target one"
        )
    return stored


def _invalid(pointer: str, message: str) -> PolicyInvalid:
    where = pointer or "the policy"
    return PolicyInvalid(f"approvalPolicy is invalid at {where}: {message}.", pointer=pointer)


@dataclass(frozen=True)
class RuleEvaluation:
    """One rule tried against a payload, and why it did not match."""

    index: int
    name: str | None
    matched: bool
    errors: list[dict[str, str]]


def evaluate(
    target: Target, payload: dict[str, Any]
) -> tuple[PolicyMatch | None, list[RuleEvaluation]]:
    """The policy's decision for ``payload`` (``None`` without a policy), and each rule
    tried until the first that matched."""
    policy = target.approval_policy
    if policy is None:
        return None, []
    tried = []
    for index, rule in enumerate(policy["rules"]):
        errors = schema_errors(payload, rule["when"])
        tried.append(RuleEvaluation(index, rule.get("name"), not errors, errors))
        if not errors:
            return _decided(target, rule, index), tried
    return _decided(target, policy["default"], None), tried


def match(target: Target, payload: dict[str, Any]) -> PolicyMatch | None:
    """The policy's decision for ``payload``, or ``None`` when the target has no policy."""
    decided, _ = evaluate(target, payload)
    return decided


def _decided(target: Target, entry: dict[str, Any], index: int | None) -> PolicyMatch:
    approvals = int(entry["approvals"])
    queue_id = entry.get("queueId", target.queue_id) if approvals > 0 else None
    return PolicyMatch(index, entry.get("name"), approvals, queue_id)


@dataclass(frozen=True)
class Simulation:
    target: Target
    has_policy: bool
    decided: PolicyMatch  # without a policy: the target's own mode, quorum and queue
    tried: list[RuleEvaluation]
    payload_errors: list[dict[str, str]]


async def simulate_policy(
    *, session: AsyncSession, viewer: Viewer, target_id: str, payload: Any
) -> Simulation:
    """Which rule a payload would match on a target, and why the rules before it did not;
    also whether the payload meets the target's input schema."""
    require_role(viewer, Role.AGENT, Role.REVIEWER, Role.OPERATOR)
    target = await session.get(Target, target_id)
    if target is None or not viewer.sees_target(target):  # the same answer for both
        raise NotFound("No such target.", field="targetId")
    checked = require_object(payload, "payload")
    decided, tried = evaluate(target, checked)
    if decided is None:
        human = target.approval_mode == ApprovalMode.HUMAN
        decided = PolicyMatch(
            None,
            None,
            target.required_approvals if human else 0,
            target.queue_id if human else None,
        )
    errors = schema_errors(checked, target.input_schema)
    return Simulation(target, target.approval_policy is not None, decided, tried, errors)
