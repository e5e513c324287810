"""Relay's global object identification: the ``Node`` interface."""

from __future__ import annotations

import strawberry


@strawberry.interface(
    description=(
        "An object that can be fetched again by its id alone, with `node(id:)`; ids are "
        "opaque and unique across all types."
    )
)
class Node:
    id: strawberry.ID
