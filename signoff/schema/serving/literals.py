"""Literals written into a GraphQL document, held to the rules for every request value.

Variables are checked when the request body is decoded (``signoff.jsonvalues``); a value
written into the document itself (``proposal(id: "\\u0000")``, ``first: 1111…``) is
checked here, during validation: U+0000 and lone surrogates never reach the database,
an integer of thousands of digits never reaches ``int()`` (Python refuses past 4,300),
and ``1e400`` never becomes an infinite float.
"""

from __future__ import annotations

import math
from typing import Any

from graphql import (
    ASTValidationRule,
    FloatValueNode,
    GraphQLError,
    IntValueNode,
    Node,
    StringValueNode,
)

from signoff.constants import JSON_NUMBER_MAX_DIGITS
from signoff.errors import InvalidCharacter, SignoffError, ValueOutOfRange
from signoff.jsonvalues import check_text


class LiteralsRule(ASTValidationRule):
    """Refuse string literals with U+0000 or a lone surrogate (``INVALID_CHARACTER``) and
    numbers too long or beyond a double (``VALUE_OUT_OF_RANGE``)."""

    def enter_string_value(self, node: StringValueNode, *_: Any) -> None:
        try:
            check_text(node.value, "a string in the query")
        except InvalidCharacter as refusal:
            self._refuse(refusal, node)

    def enter_int_value(self, node: IntValueNode, *_: Any) -> None:
        digits = len(node.value.lstrip("-"))
        if digits > JSON_NUMBER_MAX_DIGITS:
            self._refuse(
                ValueOutOfRange(
                    f"A number in the query has {digits} digits; the limit is "
                    f"{JSON_NUMBER_MAX_DIGITS}."
                ),
                node,
            )

    def enter_float_value(self, node: FloatValueNode, *_: Any) -> None:
        if len(node.value) > JSON_NUMBER_MAX_DIGITS * 2 or not math.isfinite(float(node.value)):
            self._refuse(
                ValueOutOfRange(
                    f"The number {node.value[:40]} in the query is beyond what a JSON number "
                    "can hold."
                ),
                node,
            )

    def _refuse(self, refusal: SignoffError, node: Node) -> None:
        self.report_error(GraphQLError(refusal.message, [node], extensions=refusal.extensions))
