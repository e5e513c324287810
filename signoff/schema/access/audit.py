"""The ``AuditEvent`` type, and the verifiable log's checkpoints and proofs."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from signoff import models
from signoff.events.auditlog import as_document
from signoff.schema.access.actor import Actor, load_actor
from signoff.schema.node import Node


@strawberry.type(description="Who did what to which object, and when.")
class AuditEvent(Node):
    id: strawberry.ID
    action: str
    target_type: str
    target_id: strawberry.ID
    details: JSON
    created_at: datetime
    actor_id: strawberry.Private[str | None]

    @strawberry.field(description="Null for the system itself (CLI, sweeps).")
    async def actor(self, info: strawberry.Info) -> Actor | None:
        return await load_actor(info, self.actor_id)

    @classmethod
    def from_model(cls, event: models.AuditEvent) -> AuditEvent:
        return cls(
            id=strawberry.ID(event.id),
            action=event.action,
            target_type=event.target_type,
            target_id=strawberry.ID(event.target_id),
            details=JSON(event.details),
            created_at=event.created_at,
            actor_id=event.actor_id,
        )


@strawberry.type(
    description="A signed tree head of the audit log: its size, root hash and time, signed "
    "with Ed25519 (verify with the key at /.well-known/signoff-audit-key)."
)
class AuditCheckpoint:
    size: int
    root: str = strawberry.field(description="Hex SHA-256 (RFC 9162 tree hash).")
    issued_at: str = strawberry.field(description="Exactly the text that was signed.")
    key_id: str
    signature: str = strawberry.field(description="Base64 Ed25519 signature of the note.")
    previous_size: int | None
    consistency: list[str] = strawberry.field(
        description="Proof (hex hashes) that this log extends the previous checkpoint's."
    )
    document: JSON = strawberry.field(
        description="The checkpoint as signoff audit verify reads it; keep it."
    )

    @classmethod
    def from_model(cls, checkpoint: models.AuditCheckpoint) -> AuditCheckpoint:
        return cls(
            size=checkpoint.size,
            root=checkpoint.root,
            issued_at=checkpoint.issued_at,
            key_id=checkpoint.key_id,
            signature=checkpoint.signature,
            previous_size=checkpoint.previous_size,
            consistency=list(checkpoint.consistency),
            document=JSON(as_document(checkpoint)),
        )


@strawberry.type(description="The proof that one audit record is in the log of treeSize records.")
class AuditInclusionProof:
    position: int
    tree_size: int
    leaf_hash: str
    entry: JSON = strawberry.field(description="The record as the log hashes it.")
    proof: list[str] = strawberry.field(description="Hex hashes, RFC 9162 order.")


@strawberry.type(description="The proof that the log of `to` records extends that of `from`.")
class AuditConsistencyProof:
    from_size: int = strawberry.field(name="from")
    to_size: int = strawberry.field(name="to")
    proof: list[str] = strawberry.field(description="Hex hashes, RFC 9162 order.")
