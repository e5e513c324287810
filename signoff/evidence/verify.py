"""Checking Signoff's audit log without Signoff: Merkle trees, proofs, checkpoints, exports.

Standalone on purpose: the standard library and ``cryptography`` only, no import of the
server, so an auditor can read all of it. Trees hash as RFC 9162 section 2.1 says (a leaf
is SHA-256 of 0x00 and the entry, a node SHA-256 of 0x01 and its children), so any
standard verifier's logic applies. docs/design.md section 15 describes the formats.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

LEAF_PREFIX = b"\x00"
NODE_PREFIX = b"\x01"
HASH_BYTES = 32
PUBLIC_KEY_PREFIX = "ed25519:"
CHECKPOINT_HEADER = "signoff audit checkpoint v1"
EXPORT_FORMAT = "signoff-audit-log/v1"
RECEIPT_FORMAT = "signoff-decision-receipt/v1"
# How an export's record lines start: the leaf hash, then the entry's canonical JSON.
RECORD_PREFIX = '{"type":"record","leafHash":"'


# Built once: verifying a large export encodes and decodes every record.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
_DECODER = json.JSONDecoder()


def record_line(entry: Mapping[str, Any], leaf: str) -> str:
    """An export's line for a record: ``RECORD_PREFIX``, the hex leaf hash, the entry."""
    return f'{RECORD_PREFIX}{leaf}","entry":{canonical_json(entry)}}}'


def canonical_json(value: Any) -> str:
    """Sorted keys, no insignificant whitespace, UTF-8 characters kept as they are: the
    form payload digests use (what ``json.dumps`` with those options writes)."""
    return _ENCODER.encode(value)


def _read_line(line: str) -> Any:
    """One export line's JSON document (``json.loads``, without its per-call set-up)."""
    value, end = _DECODER.raw_decode(line)
    if line[end:].strip():
        raise ValueError("extra data after the document")
    return value


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(LEAF_PREFIX + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(NODE_PREFIX + left + right).digest()


def entry_hash(entry: Mapping[str, Any]) -> bytes:
    """The leaf hash of one audit record (its ``position`` included)."""
    return leaf_hash(canonical_json(entry).encode("utf-8"))


def _split(size: int) -> int:
    """The largest power of two smaller than ``size`` (``size`` > 1)."""
    return 1 << ((size - 1).bit_length() - 1)


def root_of(leaves: Sequence[bytes]) -> bytes:
    """MTH over leaf hashes (RFC 9162 section 2.1.1); SHA-256 of nothing for no leaves."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return node_hash(root_of(leaves[:k]), root_of(leaves[k:]))


class MerkleTree:
    """An append-only tree of leaf hashes that keeps every complete, aligned subtree's
    hash, so roots and proofs for any size take a logarithmic number of hashes."""

    def __init__(self, leaves: Iterable[bytes] = ()) -> None:
        self._levels: list[list[bytes]] = [[]]
        for leaf in leaves:
            self.append(leaf)

    @property
    def size(self) -> int:
        return len(self._levels[0])

    def append(self, leaf: bytes) -> None:
        self._levels[0].append(leaf)
        level, index = 0, len(self._levels[0]) - 1
        while index % 2 == 1:
            below = self._levels[level]
            if level + 1 == len(self._levels):
                self._levels.append([])
            self._levels[level + 1].append(node_hash(below[index - 1], below[index]))
            level, index = level + 1, index // 2

    def leaf(self, index: int) -> bytes:
        return self._levels[0][index]

    def _hash(self, start: int, end: int) -> bytes:
        """MTH of leaves ``start`` to ``end`` (exclusive), ``start`` aligned as in MTH."""
        size = end - start
        if size & (size - 1) == 0:  # a complete subtree, aligned: kept
            level = size.bit_length() - 1
            return self._levels[level][start >> level]
        k = _split(size)
        return node_hash(self._hash(start, start + k), self._hash(start + k, end))

    def root(self, size: int | None = None) -> bytes:
        size = self.size if size is None else size
        self._check(size)
        return hashlib.sha256(b"").digest() if size == 0 else self._hash(0, size)

    def inclusion_proof(self, index: int, size: int) -> list[bytes]:
        """PATH(index, D[size]) (RFC 9162 section 2.1.3.1)."""
        self._check(size)
        if not 0 <= index < size:
            raise ValueError(f"position {index} is not in a tree of size {size}")
        proof: list[bytes] = []
        start, end = 0, size
        while end - start > 1:
            k = _split(end - start)
            if index < start + k:
                proof.append(self._hash(start + k, end))
                end = start + k
            else:
                proof.append(self._hash(start, start + k))
                start += k
        return proof[::-1]

    def consistency_proof(self, old: int, new: int) -> list[bytes]:
        """PROOF(old, D[new]) (RFC 9162 section 2.1.4.1)."""
        self._check(new)
        if not 0 <= old <= new:
            raise ValueError(f"no consistency proof from size {old} to size {new}")
        if old in (0, new):
            return []
        return self._subproof(old, 0, new, True)

    def _subproof(self, m: int, start: int, end: int, whole: bool) -> list[bytes]:
        n = end - start
        if m == n:
            return [] if whole else [self._hash(start, end)]
        k = _split(n)
        if m <= k:
            return [*self._subproof(m, start, start + k, whole), self._hash(start + k, end)]
        return [*self._subproof(m - k, start + k, end, False), self._hash(start, start + k)]

    def frontier(self, size: int) -> list[bytes]:
        """The right edge of the tree of ``size`` leaves (see ``Frontier``)."""
        self._check(size)
        hashes, start = [], 0
        for bit in _set_bits(size):
            hashes.append(self._hash(start, start + (1 << bit)))
            start += 1 << bit
        return hashes

    def _check(self, size: int) -> None:
        if not 0 <= size <= self.size:
            raise ValueError(f"the tree has {self.size} leaves, not {size}")


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes | None:
    """The root that ``proof`` leads to from ``leaf`` at ``index`` in a tree of ``size``
    leaves, or ``None`` if the proof cannot be one (RFC 9162 section 2.1.3.2)."""
    if not 0 <= index < size or len(leaf) != HASH_BYTES:
        return None
    fn, sn = index, size - 1
    r = leaf
    for p in proof:
        if len(p) != HASH_BYTES or sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return r if sn == 0 else None


def verify_inclusion(
    index: int, size: int, leaf: bytes, proof: Sequence[bytes], root: bytes
) -> bool:
    return root_from_inclusion(index, size, leaf, proof) == root


def verify_consistency(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows the tree of ``old`` leaves is a prefix of the tree of
    ``new`` leaves (RFC 9162 section 2.1.4.2)."""
    if not 0 <= old <= new:
        return False
    if old == new:
        return old_root == new_root and not proof
    if old == 0:
        return not proof
    if not proof or any(len(p) != HASH_BYTES for p in proof):
        return False
    path = list(proof)
    if old & (old - 1) == 0:  # a power of two: the old root is the first node
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == old_root and sr == new_root and sn == 0


class Frontier:
    """The right edge of a tree: the roots of its complete subtrees, largest first. Enough
    to append leaves and compute roots, in constant memory per level."""

    def __init__(self, size: int = 0, hashes: Sequence[bytes] = ()) -> None:
        if len(_set_bits(size)) != len(hashes):
            raise ValueError(f"a tree of {size} leaves has one hash per set bit of its size")
        self.size = size
        self._stack = [(1 << b, h) for b, h in zip(_set_bits(size), hashes, strict=True)]

    def append(self, leaf: bytes) -> None:
        width, top = 1, leaf
        stack = self._stack
        while stack and stack[-1][0] == width:
            left = stack.pop()[1]
            top = node_hash(left, top)
            width *= 2
        stack.append((width, top))
        self.size += 1

    def root(self) -> bytes:
        if not self._stack:
            return hashlib.sha256(b"").digest()
        top = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            top = node_hash(left, top)
        return top

    def hashes(self) -> list[bytes]:
        return [h for _, h in self._stack]


def _set_bits(size: int) -> list[int]:
    """The set bits of ``size``, highest first."""
    return [b for b in range(size.bit_length() - 1, -1, -1) if size >> b & 1]


# Checkpoints.


def load_public_key(text: str) -> Ed25519PublicKey:
    """A key as ``signoff audit public-key`` prints it: ``ed25519:`` and base64."""
    text = text.strip()
    if not text.startswith(PUBLIC_KEY_PREFIX):
        raise ValueError(f"a public key starts with {PUBLIC_KEY_PREFIX!r}")
    try:
        raw = base64.b64decode(text[len(PUBLIC_KEY_PREFIX) :], validate=True)
        return Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        raise ValueError("the public key is not base64 of 32 bytes") from None


def checkpoint_note(size: int, root: bytes, issued_at: str) -> bytes:
    """The exact bytes a checkpoint's signature covers."""
    return f"{CHECKPOINT_HEADER}\n{size}\n{root.hex()}\n{issued_at}\n".encode()


def verify_checkpoint(checkpoint: Mapping[str, Any], key: Ed25519PublicKey) -> bool:
    """Whether ``checkpoint`` (size, root, issuedAt, signature) is signed by ``key``."""
    try:
        note = checkpoint_note(
            int(checkpoint["size"]), bytes.fromhex(checkpoint["root"]), checkpoint["issuedAt"]
        )
        key.verify(base64.b64decode(checkpoint["signature"], validate=True), note)
    except (InvalidSignature, KeyError, TypeError, ValueError, binascii.Error):
        return False
    return True


# Exports and receipts.


@dataclass
class Verdict:
    """What a verification found: ``failure`` is ``None`` when everything verified, else
    the first problem, at ``position`` (the first position that does not verify)."""

    records: int = 0
    checkpoints: int = 0
    verified_through: int = 0  # positions below this are covered by a good checkpoint
    failure: str | None = None
    position: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def fail(self, position: int, reason: str) -> Verdict:
        if self.failure is None:
            self.failure, self.position = reason, position
        return self

    def summary(self) -> str:
        if self.failure is not None:
            return f"FAILED at position {self.position}: {self.failure}"
        return (
            f"OK: {self.records} records, {self.checkpoints} signed checkpoints; positions "
            f"below {self.verified_through} verified"
        )


def _hex(value: Any) -> bytes:
    if not isinstance(value, str):
        raise ValueError("not a hex string")
    return bytes.fromhex(value)


def verify_export(
    lines: Iterable[str],
    key: Ed25519PublicKey,
    *,
    kept: Sequence[Mapping[str, Any]] = (),
) -> Verdict:
    """Recompute an export (``signoff audit export``) and check it against its signed
    checkpoints and the ``kept`` ones (checkpoints the auditor kept from before)."""
    verdict = Verdict()
    frontier: Frontier | None = None
    start = 0
    previous: Mapping[str, Any] | None = None
    kept_by_size = {int(c["size"]): c for c in kept}
    for number, line in enumerate(_lines(lines), 1):
        raw_entry: str | None = None
        try:
            if line.startswith(RECORD_PREFIX):
                # The export's own layout: the entry's bytes are hashed as they stand (a
                # record altered in any byte no longer gives its leaf), and read once.
                leaf_text, _, raw_entry = line.rstrip()[len(RECORD_PREFIX) : -1].partition(
                    '","entry":'
                )
                item = {"type": "record", "leafHash": leaf_text, "entry": _read_line(raw_entry)}
            else:
                item = _read_line(line.lstrip())
            kind = item["type"]
        except (ValueError, KeyError, TypeError):
            expected = frontier.size if frontier else start
            return verdict.fail(expected, f"line {number} is not an export line")
        if kind == "header":
            if item.get("format") != EXPORT_FORMAT or frontier is not None:
                return verdict.fail(start, f"line {number}: not a {EXPORT_FORMAT} header")
            start = int(item.get("since", 0))
            try:
                frontier = Frontier(start, [_hex(h) for h in item.get("frontier", [])])
            except ValueError as exc:
                return verdict.fail(start, f"the header's frontier is malformed: {exc}")
            verdict.verified_through = start
            if start and not item.get("checkpoint"):
                return verdict.fail(start, "an export from a later position needs its checkpoint")
            if start:
                anchor = item["checkpoint"]
                if not verify_checkpoint(anchor, key) or int(anchor["size"]) != start:
                    return verdict.fail(start, "the starting checkpoint's signature fails")
                if frontier.root() != _hex(anchor["root"]):
                    return verdict.fail(start, "the frontier does not give the starting root")
                previous = anchor
            continue
        if frontier is None:
            return verdict.fail(0, "the export has no header line")
        if kind == "record":
            position = frontier.size
            entry = item.get("entry")
            if not isinstance(entry, dict) or entry.get("position") != position:
                claimed = entry.get("position") if isinstance(entry, dict) else None
                if isinstance(claimed, int) and claimed > position:
                    return verdict.fail(position, "missing: the next record is at a later position")
                return verdict.fail(position, f"line {number} claims position {claimed}")
            computed = entry_hash(entry) if raw_entry is None else leaf_hash(raw_entry.encode())
            if item.get("leafHash") is not None and item["leafHash"] != computed.hex():
                return verdict.fail(position, "the record does not match its leaf hash")
            frontier.append(computed)
            verdict.records += 1
            kept_here = kept_by_size.get(frontier.size)
            if kept_here is not None and frontier.root() != _hex(kept_here["root"]):
                return verdict.fail(
                    verdict.verified_through,
                    f"the records up to {frontier.size} do not give the kept checkpoint's root",
                )
        elif kind == "checkpoint":
            size = int(item.get("size", -1))
            if not verify_checkpoint(item, key):
                return verdict.fail(
                    verdict.verified_through,
                    f"the checkpoint of size {size} is not signed by this public key",
                )
            if size > frontier.size:
                return verdict.fail(
                    frontier.size, f"missing: the checkpoint of size {size} covers this position"
                )
            if size != frontier.size:
                return verdict.fail(size, f"the checkpoint of size {size} is out of place")
            if frontier.root() != _hex(item["root"]):
                return verdict.fail(
                    verdict.verified_through,
                    f"the records from position {verdict.verified_through} up to {size} do not "
                    f"give the checkpoint's root (altered, removed, reordered or inserted)",
                )
            if previous is not None and item.get("consistency") is not None:
                proof = [_hex(h) for h in item["consistency"]]
                if not verify_consistency(
                    int(previous["size"]), size, _hex(previous["root"]), _hex(item["root"]), proof
                ):
                    return verdict.fail(size, "the checkpoint's consistency proof fails")
            previous = item
            verdict.checkpoints += 1
            verdict.verified_through = size
        else:
            return verdict.fail(frontier.size, f"line {number} has an unknown type {kind!r}")
    if frontier is None:
        return verdict.fail(0, "the export is empty")
    for size, checkpoint in sorted(kept_by_size.items()):
        if not verify_checkpoint(checkpoint, key):
            return verdict.fail(0, f"the kept checkpoint of size {size} is not signed by this key")
        if size > frontier.size:
            return verdict.fail(
                frontier.size, f"missing: the kept checkpoint of size {size} covers this position"
            )
    if frontier.size > verdict.verified_through:
        verdict.notes.append(
            f"positions {verdict.verified_through} to {frontier.size - 1} are not yet covered "
            "by a signed checkpoint"
        )
    return verdict


def _lines(lines: Iterable[str]) -> Iterator[str]:
    for line in lines:
        if line.strip():
            yield line


def verify_receipt(receipt: Mapping[str, Any], key: Ed25519PublicKey) -> Verdict:
    """Check a decision receipt: its checkpoint's signature, each record's inclusion in that
    checkpoint, and that what the receipt says about the decision is in those records."""
    verdict = Verdict()
    if receipt.get("format") != RECEIPT_FORMAT:
        return verdict.fail(0, f"not a {RECEIPT_FORMAT} document")
    checkpoint = receipt.get("checkpoint") or {}
    if not verify_checkpoint(checkpoint, key):
        return verdict.fail(0, "the receipt's checkpoint is not signed by this public key")
    size, root = int(checkpoint["size"]), _hex(checkpoint["root"])
    verdict.checkpoints = 1
    entries: list[Mapping[str, Any]] = []
    for record in receipt.get("records", []):
        entry = record.get("entry") or {}
        position = entry.get("position")
        if not isinstance(position, int):
            return verdict.fail(0, "a record has no position")
        try:
            proof = [_hex(h) for h in record.get("inclusionProof", [])]
        except ValueError:
            return verdict.fail(position, "the record's inclusion proof is malformed")
        if not verify_inclusion(position, size, entry_hash(entry), proof, root):
            return verdict.fail(position, f"the record is not in the checkpoint of size {size}")
        entries.append(entry)
        verdict.records += 1
    proposal = receipt.get("proposal") or {}
    mine = [e for e in entries if e.get("targetId") == proposal.get("id")]
    for approval in receipt.get("approvals", []):
        if not any(_backs(entry, approval) for entry in mine):
            return verdict.fail(
                size, f"no proven record backs the approval by {approval.get('actorId')}"
            )
    verdict.verified_through = size
    return verdict


def _backs(entry: Mapping[str, Any], approval: Mapping[str, Any]) -> bool:
    """Whether an audit entry records ``approval``: its actor, decision, digest, revision."""
    details = entry.get("details") or {}
    return (
        entry.get("actorId") == approval.get("actorId")
        and entry.get("action") == f"approval.{str(approval.get('decision')).lower()}"
        and details.get("payload_digest") == approval.get("digest")
        and details.get("revision") == approval.get("revision")
    )
