from pydantic import Field

from .base_model import BaseModel
from .fragments import ProposalFields


class ReportExecution(BaseModel):
    report_execution: "ReportExecutionReportExecution" = Field(alias="reportExecution")


class ReportExecutionReportExecution(BaseModel):
    replayed: bool
    proposal: "ReportExecutionReportExecutionProposal"


ReportExecutionReportExecutionProposal = ProposalFields
ReportExecution.model_rebuild()
ReportExecutionReportExecution.model_rebuild()
