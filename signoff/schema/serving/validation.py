"""Validating a document: Signoff's limits first, graphql-core's rules only after them.

Signoff's limits (``signoff/schema/serving/limits.py``) are linear in the document; some of
graphql-core's rules are not (``OverlappingFieldsCanBeMergedRule`` compares the fields of
one response name pairwise). Running those only on documents within the limits, which bound
such merges (``QUERY_MAX_MERGED``), keeps any document cheap to validate. Verdicts are
cached per document.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

from graphql import ASTValidationRule, DocumentNode, GraphQLError, GraphQLSchema, validate
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext
from strawberry.types.graphql import OperationType

from signoff.internals import core_schema
from signoff.schema.serving.introspection import IntrospectionOffRule
from signoff.schema.serving.limits import limits_refusal
from signoff.schema.serving.literals import LiteralsRule
from signoff.schema.subscription import LiveEventsUnavailable


@lru_cache(maxsize=256)
def _validate(
    schema: GraphQLSchema, document: DocumentNode, rules: tuple[type[ASTValidationRule], ...]
) -> list[GraphQLError]:
    refusal = limits_refusal(schema, document)
    if refusal is not None:
        return [refusal]
    return validate(schema, document, [*rules, LiteralsRule])


def _subscription_over_http(context: ExecutionContext) -> bool:
    """A subscription sent as an HTTP request: it has no socket to send its events on."""
    try:
        is_subscription = context.operation_type is OperationType.SUBSCRIPTION
    except Exception:  # no such operation: execution refuses it with its own error
        return False
    return is_subscription and getattr(context.context, "live", None) is None


class CheckedValidation(SchemaExtension):
    """Replaces Strawberry's validation (and ``ValidationCache``); with ``introspection=False``
    also refuses ``__schema`` and ``__type`` (``INTROSPECTION_DISABLED``), and a valid
    subscription sent over HTTP (``SUBSCRIPTIONS_UNAVAILABLE``, not an ``INTERNAL`` from
    executing it as a query)."""

    def __init__(self, introspection: bool = True) -> None:
        self.introspection = introspection

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        assert context.graphql_document is not None
        rules = tuple(context.validation_rules)
        if not self.introspection:
            rules = (*rules, IntrospectionOffRule)
        errors = _validate(core_schema(context.schema), context.graphql_document, rules)
        if not errors and _subscription_over_http(context):
            refusal = LiveEventsUnavailable()
            errors = [GraphQLError(refusal.message, extensions=refusal.extensions)]
        context.pre_execution_errors = errors
        yield
