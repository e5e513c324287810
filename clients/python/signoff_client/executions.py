"""Running an approved action in the agent's own process, once per approval.

On a target without a url (Signoff's ``agentExecutes``), approval authorises one
execution. ``execute`` takes that right from the server (``beginExecution``) before it
runs the function, and reports how it went (``reportExecution``) after; a proposal whose
execution was already taken, by this process or any other, never runs the function
again: ``execute`` returns the result recorded then, or raises ``AlreadyExecuted``.
"""

from __future__ import annotations

import inspect
import json
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from signoff_client.errors import AlreadyExecuted, ExecutionConsumed, NotApproved, NotExecutable
from signoff_client.generated.enums import ExecutionOutcome, ProposalState
from signoff_client.generated.input_types import BeginExecutionInput, ReportExecutionInput
from signoff_client.outcomes import Approved, implied_outcomes
from signoff_client.proposals import Proposal

# Failure codes are at most 64 characters on the server.
ERROR_CODE_CHARS = 64
DONE = frozenset({ProposalState.APPLIED, ProposalState.COMPENSATION_REQUIRED})


def executor_label() -> str:
    """Who runs it, as a refusal to another process names it: host, process, and a
    random part (two runs of one process are two executors)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Held:
    """This caller holds the execution: report with ``lease``."""

    lease: int
    payload: dict[str, Any]


@dataclass(frozen=True)
class Recorded:
    """The execution happened before: what it reported."""

    result: Any


async def execute(
    proposal: Proposal,
    function: Callable[..., Any],
    *,
    timeout: float | None = None,  # noqa: ASYNC109
    lease_seconds: int | None = None,
) -> Any:
    """Run ``function`` with the approved payload as keyword arguments, exactly once for
    this approval; wait for the decision first if it is still pending (``timeout``).

    Returns what ``function`` returned, reported to Signoff as the result (when it is
    JSON). An exception it raises is reported as a failure, then re-raised. If the
    execution was already taken, returns the result recorded (the proposal is applied)
    or raises ``AlreadyExecuted``; a proposal not approved raises ``NotApproved``."""
    taken = await take(proposal, timeout=timeout, lease_seconds=lease_seconds)
    if isinstance(taken, Recorded):
        return taken.result
    try:
        returned = function(**taken.payload)
        if inspect.isawaitable(returned):
            returned = await returned
    except BaseException as exc:
        await report_failed(proposal, taken, exc)
        raise
    await report_applied(proposal, taken, returned)
    return returned


async def take(
    proposal: Proposal,
    *,
    timeout: float | None = None,  # noqa: ASYNC109
    lease_seconds: int | None = None,
) -> Held | Recorded:
    """Take the approval's one execution (``beginExecution``), or what it recorded if it
    was taken before."""
    outcome = await _approval(proposal, timeout)
    if not proposal.state.agent_executes:
        raise NotExecutable(
            f"Signoff delivers target {proposal.state.target.name!r} itself; the agent does "
            "not execute its proposals.",
            extensions={"reason": "DELIVERED_BY_SIGNOFF"},
        )
    try:
        began = await proposal.client.api.begin_execution(
            input=BeginExecutionInput(
                proposalId=proposal.id,
                payloadDigest=outcome.payload_digest,
                leaseSeconds=lease_seconds,
                executor=executor_label(),
            )
        )
    except ExecutionConsumed:
        return Recorded(await _recorded(proposal))
    proposal.state = began.begin_execution.proposal
    return Held(began.begin_execution.lease, dict(outcome.payload))


async def report_applied(proposal: Proposal, held: Held, returned: Any) -> None:
    """It ran: ``returned`` is kept as the result when it is JSON."""
    await _report(proposal, held.lease, ExecutionOutcome.APPLIED, result=_json_or_none(returned))


async def report_failed(proposal: Proposal, held: Held, exc: BaseException) -> None:
    """It raised: the failure's code is the exception's class."""
    await _report(proposal, held.lease, ExecutionOutcome.FAILED, error_code=_code_of(exc))


async def _approval(proposal: Proposal, timeout: float | None) -> Approved:  # noqa: ASYNC109
    """The approval, waited for if need be; ``NotApproved`` for any other decision."""
    while True:
        implied = implied_outcomes(proposal.state)
        if implied:
            if isinstance(implied[0], Approved):
                return implied[0]
            raise NotApproved(implied[0])
        await proposal.wait(timeout)


async def _recorded(proposal: Proposal) -> Any:
    """The result the execution that consumed the approval recorded, if it applied."""
    state = await proposal.refresh()
    if state.state in DONE:
        return state.result
    executor = state.executor or (state.executed_by.name if state.executed_by else None)
    raise AlreadyExecuted(proposal.id, state.state.value, executor)


async def _report(
    proposal: Proposal,
    lease: int,
    outcome: ExecutionOutcome,
    *,
    result: Any = None,
    error_code: str | None = None,
) -> None:
    answer = await proposal.client.api.report_execution(
        input=ReportExecutionInput(
            proposalId=proposal.id,
            lease=lease,
            outcome=outcome,
            result=result,
            errorCode=error_code,
        )
    )
    proposal.state = answer.report_execution.proposal


def _code_of(exc: BaseException) -> str:
    """An exception's class, as the failure's code (``ValueError`` → ``VALUE_ERROR``)."""
    name = type(exc).__name__
    snake = "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name))
    return snake.upper()[:ERROR_CODE_CHARS]


def _json_or_none(value: Any) -> Any:
    """``value`` if it is a JSON document Signoff can keep, else ``None``."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return value
