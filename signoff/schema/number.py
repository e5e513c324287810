"""``Number``: a JSON number as the payloads hold it, so that a sum of integers reads
``2200`` where GraphQL's ``Float`` would answer ``2200.0``."""

from __future__ import annotations

from typing import NewType

import strawberry
from strawberry.types.scalar import ScalarDefinition

Number = NewType("Number", float)

NUMBER: ScalarDefinition = strawberry.scalar(
    name="Number",
    description="A JSON number: an integer stays an integer, a fraction is a Float.",
)
