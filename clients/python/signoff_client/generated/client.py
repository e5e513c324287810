from collections.abc import AsyncIterator
from typing import Any, Optional, Union

from .accept_amendment import AcceptAmendment
from .async_base_client import AsyncBaseClient
from .base_model import UNSET, UnsetType
from .begin_execution import BeginExecution
from .feed_cursor import FeedCursor
from .get_draft import GetDraft
from .get_proposal import GetProposal
from .input_types import (
    AcceptAmendmentInput,
    BeginExecutionInput,
    PrepareDraftInput,
    ProposeActionInput,
    ReportExecutionInput,
)
from .prepare_draft import PrepareDraft
from .proposal_events import ProposalEvents
from .propose_action import ProposeAction
from .report_execution import ReportExecution
from .targets import Targets
from .viewer import Viewer


def gql(q: str) -> str:
    return q


class GeneratedClient(AsyncBaseClient):
    async def viewer(self, **kwargs: Any) -> Viewer:
        query = gql("""
            query Viewer {
              viewer {
                actor {
                  id
                  name
                  role
                }
              }
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="Viewer", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Viewer.model_validate(data)

    async def targets(self, **kwargs: Any) -> Targets:
        query = gql("""
            query Targets {
              targets {
                id
                name
                inputSchema
                approvalMode
                requiredApprovals
                approvalPolicy
                amendable
                amendmentsNeedProposer
                agentExecutes
                active
                queue {
                  id
                  slug
                }
              }
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="Targets", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return Targets.model_validate(data)

    async def feed_cursor(self, **kwargs: Any) -> FeedCursor:
        query = gql("""
            query FeedCursor {
              changeFeedCursor
            }
            """)
        variables: dict[str, object] = {}
        response = await self.execute(
            query=query, operation_name="FeedCursor", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return FeedCursor.model_validate(data)

    async def get_proposal(self, id: str, **kwargs: Any) -> GetProposal:
        query = gql("""
            query GetProposal($id: ID!) {
              changeFeedCursor
              proposal(id: $id) {
                ...ProposalFields
              }
            }

            fragment ProposalFields on Proposal {
              id
              state
              actionCode
              subject
              payload
              payloadDigest
              operationKey
              revision
              awaitingProposer
              requiredApprovals
              approvalCount
              expiresAt
              decidedAt
              appliedAt
              result
              agentExecutes
              executor
              executedBy {
                name
              }
              deliveryTerminal
              deliveryAttemptCount
              lastErrorCode
              target {
                id
                name
              }
              deadlinePolicy {
                action
                reason
              }
              approvals {
                decision
                reason
                revision
                createdAt
                approver {
                  name
                }
              }
              revisions {
                revision
                digest
                payload
                reason
                amendedBy {
                  name
                }
              }
              attempts {
                attemptNumber
                responseClass
                statusCode
                errorCode
                responseDigest
                finishedAt
              }
            }
            """)
        variables: dict[str, object] = {"id": id}
        response = await self.execute(
            query=query, operation_name="GetProposal", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return GetProposal.model_validate(data)

    async def propose_action(
        self, input: ProposeActionInput, **kwargs: Any
    ) -> ProposeAction:
        query = gql("""
            mutation ProposeAction($input: ProposeActionInput!) {
              proposeAction(input: $input) {
                replayed
                proposal {
                  ...ProposalFields
                }
              }
            }

            fragment ProposalFields on Proposal {
              id
              state
              actionCode
              subject
              payload
              payloadDigest
              operationKey
              revision
              awaitingProposer
              requiredApprovals
              approvalCount
              expiresAt
              decidedAt
              appliedAt
              result
              agentExecutes
              executor
              executedBy {
                name
              }
              deliveryTerminal
              deliveryAttemptCount
              lastErrorCode
              target {
                id
                name
              }
              deadlinePolicy {
                action
                reason
              }
              approvals {
                decision
                reason
                revision
                createdAt
                approver {
                  name
                }
              }
              revisions {
                revision
                digest
                payload
                reason
                amendedBy {
                  name
                }
              }
              attempts {
                attemptNumber
                responseClass
                statusCode
                errorCode
                responseDigest
                finishedAt
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="ProposeAction", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ProposeAction.model_validate(data)

    async def accept_amendment(
        self, input: AcceptAmendmentInput, **kwargs: Any
    ) -> AcceptAmendment:
        query = gql("""
            mutation AcceptAmendment($input: AcceptAmendmentInput!) {
              acceptAmendment(input: $input) {
                replayed
                proposal {
                  ...ProposalFields
                }
              }
            }

            fragment ProposalFields on Proposal {
              id
              state
              actionCode
              subject
              payload
              payloadDigest
              operationKey
              revision
              awaitingProposer
              requiredApprovals
              approvalCount
              expiresAt
              decidedAt
              appliedAt
              result
              agentExecutes
              executor
              executedBy {
                name
              }
              deliveryTerminal
              deliveryAttemptCount
              lastErrorCode
              target {
                id
                name
              }
              deadlinePolicy {
                action
                reason
              }
              approvals {
                decision
                reason
                revision
                createdAt
                approver {
                  name
                }
              }
              revisions {
                revision
                digest
                payload
                reason
                amendedBy {
                  name
                }
              }
              attempts {
                attemptNumber
                responseClass
                statusCode
                errorCode
                responseDigest
                finishedAt
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="AcceptAmendment", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return AcceptAmendment.model_validate(data)

    async def begin_execution(
        self, input: BeginExecutionInput, **kwargs: Any
    ) -> BeginExecution:
        query = gql("""
            mutation BeginExecution($input: BeginExecutionInput!) {
              beginExecution(input: $input) {
                lease
                proposal {
                  ...ProposalFields
                }
              }
            }

            fragment ProposalFields on Proposal {
              id
              state
              actionCode
              subject
              payload
              payloadDigest
              operationKey
              revision
              awaitingProposer
              requiredApprovals
              approvalCount
              expiresAt
              decidedAt
              appliedAt
              result
              agentExecutes
              executor
              executedBy {
                name
              }
              deliveryTerminal
              deliveryAttemptCount
              lastErrorCode
              target {
                id
                name
              }
              deadlinePolicy {
                action
                reason
              }
              approvals {
                decision
                reason
                revision
                createdAt
                approver {
                  name
                }
              }
              revisions {
                revision
                digest
                payload
                reason
                amendedBy {
                  name
                }
              }
              attempts {
                attemptNumber
                responseClass
                statusCode
                errorCode
                responseDigest
                finishedAt
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="BeginExecution", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return BeginExecution.model_validate(data)

    async def report_execution(
        self, input: ReportExecutionInput, **kwargs: Any
    ) -> ReportExecution:
        query = gql("""
            mutation ReportExecution($input: ReportExecutionInput!) {
              reportExecution(input: $input) {
                replayed
                proposal {
                  ...ProposalFields
                }
              }
            }

            fragment ProposalFields on Proposal {
              id
              state
              actionCode
              subject
              payload
              payloadDigest
              operationKey
              revision
              awaitingProposer
              requiredApprovals
              approvalCount
              expiresAt
              decidedAt
              appliedAt
              result
              agentExecutes
              executor
              executedBy {
                name
              }
              deliveryTerminal
              deliveryAttemptCount
              lastErrorCode
              target {
                id
                name
              }
              deadlinePolicy {
                action
                reason
              }
              approvals {
                decision
                reason
                revision
                createdAt
                approver {
                  name
                }
              }
              revisions {
                revision
                digest
                payload
                reason
                amendedBy {
                  name
                }
              }
              attempts {
                attemptNumber
                responseClass
                statusCode
                errorCode
                responseDigest
                finishedAt
              }
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="ReportExecution", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return ReportExecution.model_validate(data)

    async def proposal_events(
        self,
        proposal_id: str,
        after: Union[Optional[str], UnsetType] = UNSET,
        **kwargs: Any,
    ) -> AsyncIterator[ProposalEvents]:
        query = gql("""
            subscription ProposalEvents($proposalId: ID!, $after: String) {
              proposalEvents(proposalId: $proposalId, after: $after) {
                cursor
                kind
                snapshot
                proposal {
                  ...ProposalFields
                }
              }
            }

            fragment ProposalFields on Proposal {
              id
              state
              actionCode
              subject
              payload
              payloadDigest
              operationKey
              revision
              awaitingProposer
              requiredApprovals
              approvalCount
              expiresAt
              decidedAt
              appliedAt
              result
              agentExecutes
              executor
              executedBy {
                name
              }
              deliveryTerminal
              deliveryAttemptCount
              lastErrorCode
              target {
                id
                name
              }
              deadlinePolicy {
                action
                reason
              }
              approvals {
                decision
                reason
                revision
                createdAt
                approver {
                  name
                }
              }
              revisions {
                revision
                digest
                payload
                reason
                amendedBy {
                  name
                }
              }
              attempts {
                attemptNumber
                responseClass
                statusCode
                errorCode
                responseDigest
                finishedAt
              }
            }
            """)
        variables: dict[str, object] = {"proposalId": proposal_id, "after": after}
        async for data in self.execute_ws(
            query=query, operation_name="ProposalEvents", variables=variables, **kwargs
        ):
            yield ProposalEvents.model_validate(data)

    async def prepare_draft(
        self, input: PrepareDraftInput, **kwargs: Any
    ) -> PrepareDraft:
        query = gql("""
            mutation PrepareDraft($input: PrepareDraftInput!) {
              prepareDraft(input: $input) {
                replayed
                draft {
                  ...DraftFields
                }
              }
            }

            fragment DraftFields on Draft {
              id
              status
              revision
              values
              valuesDigest
              updatedByUser
              owner
              sessionId
              accountId
              expiresAt
              cancelReason
              reservation {
                operationKey
                valuesDigest
              }
              receipt
              createdAt
              updatedAt
            }
            """)
        variables: dict[str, object] = {"input": input}
        response = await self.execute(
            query=query, operation_name="PrepareDraft", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return PrepareDraft.model_validate(data)

    async def get_draft(self, id: str, session_id: str, **kwargs: Any) -> GetDraft:
        query = gql("""
            query GetDraft($id: ID!, $sessionId: String!) {
              draft(id: $id, sessionId: $sessionId) {
                ...DraftFields
              }
            }

            fragment DraftFields on Draft {
              id
              status
              revision
              values
              valuesDigest
              updatedByUser
              owner
              sessionId
              accountId
              expiresAt
              cancelReason
              reservation {
                operationKey
                valuesDigest
              }
              receipt
              createdAt
              updatedAt
            }
            """)
        variables: dict[str, object] = {"id": id, "sessionId": session_id}
        response = await self.execute(
            query=query, operation_name="GetDraft", variables=variables, **kwargs
        )
        data = self.get_data(response)
        return GetDraft.model_validate(data)
