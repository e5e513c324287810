"""Reading the audit log, and the proofs of its verifiable log. It is written by the
transition core (``signoff.resolvers.core.transitions.record``), from the same description
as the change feed; positions and checkpoints are ``signoff.events.auditlog``'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmodel import col
from sqlmodel.ext.asyncio.session import AsyncSession

from signoff.errors import AuditProofUnavailable, NotFound
from signoff.events import auditlog
from signoff.evidence.verify import MerkleTree
from signoff.models import AuditCheckpoint, AuditEvent, Role
from signoff.resolvers.access.rules import Viewer, require_role
from signoff.resolvers.core.pagination import Equals, Order, Page, Where, paginate

AUDIT_ORDER = (
    Order(col(AuditEvent.created_at), descending=True),
    Order(col(AuditEvent.id), descending=True),
)


async def list_audit_events(
    *,
    session: AsyncSession,
    viewer: Viewer,
    target_type: str | None = None,
    target_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[AuditEvent]:
    """Newest first. The audit log is for operators and admins."""
    require_role(viewer, Role.OPERATOR)
    where: list[Where] = []
    if target_type is not None:
        where.append(Equals(col(AuditEvent.target_type), target_type))
    if target_id is not None:
        where.append(Equals(col(AuditEvent.target_id), target_id))
    return await paginate(session, AuditEvent, where, AUDIT_ORDER, first=first, after=after)


# Each database's leaf hashes, as far as this process has read them (``auditlog.LeafCache``).
_TREES: dict[str, auditlog.LeafCache] = {}


async def audit_tree(session: AsyncSession, size: int) -> MerkleTree:
    """The log's tree of at least ``size`` leaves, read from where this process left off;
    read again from the start if the stored log no longer ends as this process read it."""
    bind: Any = session.get_bind()
    cache = _TREES.setdefault(str(bind.url), auditlog.LeafCache())
    if not await cache.still_holds(session):
        cache.forget()
    return await cache.tree_of(session, size)


async def latest_checkpoint(*, session: AsyncSession, viewer: Viewer) -> AuditCheckpoint | None:
    """The latest signed checkpoint: anyone signed in may read it (it names no record)."""
    return await auditlog.latest_checkpoint(session)


async def _log_size(session: AsyncSession, tree_size: int | None) -> int:
    if tree_size is not None:
        return tree_size
    latest = await auditlog.latest_checkpoint(session)
    if latest is None:
        raise AuditProofUnavailable("No checkpoint has been signed yet.")
    return latest.size


@dataclass(frozen=True)
class InclusionProof:
    entry: dict[str, Any]
    leaf_hash: str
    tree_size: int
    proof: list[str]


async def inclusion_proof(
    *, session: AsyncSession, viewer: Viewer, event_id: str, tree_size: int | None = None
) -> InclusionProof:
    """The proof that audit record ``event_id`` is in the log of ``tree_size`` records (the
    latest checkpoint's by default). Operators and admins, as the record itself."""
    require_role(viewer, Role.OPERATOR)
    size = await _log_size(session, tree_size)
    found = await auditlog.records_of(session, [event_id])
    if not found:
        raise NotFound("No such audit record in the log (it may not have a position yet).")
    entry = found[0]["entry"]
    if not 0 <= entry["position"] < size <= await auditlog.log_size(session):
        raise AuditProofUnavailable(
            f"The record is at position {entry['position']}, outside a log of {size} records."
        )
    tree = await audit_tree(session, size)
    proof = tree.inclusion_proof(entry["position"], size)
    return InclusionProof(entry, found[0]["leafHash"], size, [h.hex() for h in proof])


async def consistency_proof(
    *, session: AsyncSession, viewer: Viewer, old_size: int, new_size: int
) -> list[str]:
    """The proof that the log of ``new_size`` records extends the one of ``old_size``."""
    if not 0 <= old_size <= new_size <= await auditlog.log_size(session):
        raise AuditProofUnavailable("Give 0 <= from <= to, with to no larger than the log's size.")
    tree = await audit_tree(session, new_size)
    return [h.hex() for h in tree.consistency_proof(old_size, new_size)]
