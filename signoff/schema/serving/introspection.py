"""Introspection switched off (``SIGNOFF_INTROSPECTION=0``), refused with its own code."""

from __future__ import annotations

from typing import Any

from graphql import FieldNode, GraphQLError
from graphql.validation import NoSchemaIntrospectionCustomRule

from signoff.errors import IntrospectionDisabled


class IntrospectionOffRule(NoSchemaIntrospectionCustomRule):
    """graphql-core's rule (``__schema`` and ``__type``; ``__typename`` stays allowed),
    answered with ``INTROSPECTION_DISABLED``."""

    def enter_field(self, node: FieldNode, *_: Any) -> None:
        if node.name.value in ("__schema", "__type"):
            refusal = IntrospectionDisabled()
            self.report_error(GraphQLError(refusal.message, [node], extensions=refusal.extensions))
