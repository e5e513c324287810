"""Validating a document: Signoff's limits first, graphql-core's rules only after them.

Signoff's limits (``signoff/schema/serving/limits.py``) are linear in the document; some of
graphql-core's rules are not (``OverlappingFieldsCanBeMergedRule`` compares the fields of
one response name pairwise). Running those only on documents within the limits, which bound
such merges (``QUERY_MAX_MERGED``), keeps any document cheap to validate. Verdicts are
cached by the document's identity (parsing is cached, and hashing a document hashes all
of its nodes).
"""

from __future__ import annotations

from collections.abc import Iterator

from graphql import ASTValidationRule, DocumentNode, GraphQLError, GraphQLSchema, validate
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext
from strawberry.types.graphql import OperationType

from signoff.internals import core_schema
from signoff.schema.serving.introspection import IntrospectionOffRule
from signoff.schema.serving.limits import limits_refusal
from signoff.schema.serving.literals import LiteralsRule
from signoff.schema.subscription import LiveEventsUnavailable

Rules = tuple[type[ASTValidationRule], ...]
# Verdicts by the ids of schema, document and the rules; each entry keeps its schema and
# document alive, so that their ids name them and no others.
_VERDICTS: dict[tuple[int, int, Rules], tuple[GraphQLSchema, DocumentNode, list[GraphQLError]]] = {}
VERDICTS = 256


def validated(schema: GraphQLSchema, document: DocumentNode, rules: Rules) -> list[GraphQLError]:
    """The errors of ``document`` (Signoff's limits, then ``rules``), cached."""
    key = (id(schema), id(document), rules)
    entry = _VERDICTS.get(key)
    if entry is not None:
        return entry[2]
    refusal = limits_refusal(schema, document)
    errors = [refusal] if refusal else validate(schema, document, [*rules, LiteralsRule])
    if len(_VERDICTS) >= VERDICTS:
        _VERDICTS.pop(next(iter(_VERDICTS)))
    _VERDICTS[key] = (schema, document, errors)
    return errors


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
        errors = validated(core_schema(context.schema), context.graphql_document, rules)
        if not errors and _subscription_over_http(context):
            refusal = LiveEventsUnavailable()
            errors = [GraphQLError(refusal.message, extensions=refusal.extensions)]
        context.pre_execution_errors = errors
        yield
