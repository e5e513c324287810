"""String literals in a GraphQL document, held to the rule for every stored string.

Variables are checked when the request body is decoded (``signoff.jsonvalues``); a
string written into the document itself (``proposal(id: "\\u0000")``) is checked here,
during validation, so U+0000 or a lone surrogate never reaches the database.
"""

from __future__ import annotations

from typing import Any

from graphql import ASTValidationRule, GraphQLError, StringValueNode

from signoff.errors import InvalidCharacter
from signoff.jsonvalues import check_text


class StringLiteralsRule(ASTValidationRule):
    """Refuse a string literal with U+0000 or a lone surrogate (``INVALID_CHARACTER``)."""

    def enter_string_value(self, node: StringValueNode, *_: Any) -> None:
        try:
            check_text(node.value, "a string in the query")
        except InvalidCharacter as refusal:
            self.report_error(GraphQLError(refusal.message, [node], extensions=refusal.extensions))
