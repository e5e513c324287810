"""The standalone verifier against RFC 6962/9162 test vectors and by properties.

The vectors are those of transparency-dev/merkle (proof/verify_test.go), the library
behind Trillian and Go's checksum database: leaves, roots for sizes 1 to 8, and
inclusion and consistency proofs with their hashes.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff.digest import canonical_json as server_canonical_json
from signoff.evidence import verify
from signoff.evidence.verify import (
    Frontier,
    MerkleTree,
    checkpoint_note,
    leaf_hash,
    root_from_inclusion,
    root_of,
    verify_checkpoint,
    verify_consistency,
    verify_inclusion,
)

LEAVES = [
    bytes.fromhex(h) for h in ("", "00", "10", "2021", "3031", "40414243", "5051525354555657")
] + [bytes.fromhex("606162636465666768696a6b6c6d6e6f")]
EMPTY_ROOT = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# (leaf index counted from 1, as in the source, tree size, proof)
INCLUSION = [
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (3, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (
        2,
        5,
        [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
]
CONSISTENCY = [
    (1, 1, []),
    (
        1,
        8,
        [
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        [
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        [
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
]
HASHES = [leaf_hash(leaf) for leaf in LEAVES]


def _unhex(proof: list[str]) -> list[bytes]:
    return [bytes.fromhex(h) for h in proof]


def test_roots_match_the_published_tree_heads() -> None:
    tree = MerkleTree()
    assert tree.root().hex() == root_of([]).hex() == EMPTY_ROOT
    for size, expected in enumerate(ROOTS, 1):
        tree.append(HASHES[size - 1])
        assert root_of(HASHES[:size]).hex() == expected
        assert tree.root().hex() == expected
        frontier = Frontier()
        for leaf in HASHES[:size]:
            frontier.append(leaf)
        assert frontier.root().hex() == expected


def test_leaf_and_node_prefixes() -> None:
    assert leaf_hash(b"").hex() == ROOTS[0]
    assert verify.node_hash(HASHES[0], HASHES[1]).hex() == ROOTS[1]
    assert (
        verify.node_hash(HASHES[0], HASHES[1])
        == hashlib.sha256(b"\x01" + HASHES[0] + HASHES[1]).digest()
    )


@pytest.mark.parametrize(("leaf", "size", "proof"), INCLUSION)
def test_inclusion_vectors(leaf: int, size: int, proof: list[str]) -> None:
    tree = MerkleTree(HASHES[:size])
    assert [p.hex() for p in tree.inclusion_proof(leaf - 1, size)] == proof
    root = bytes.fromhex(ROOTS[size - 1])
    assert verify_inclusion(leaf - 1, size, HASHES[leaf - 1], _unhex(proof), root)
    # The corruptions of the source's verifierCheck, each refused.
    good = _unhex(proof)
    some = bytes.fromhex("abacaba000000000000000000000000000000000000000000060061e00123456")
    wrong = [
        (leaf - 2, size, HASHES[leaf - 1], good, root),
        (leaf, size, HASHES[leaf - 1], good, root),
        ((leaf - 1) ^ 2, size, HASHES[leaf - 1], good, root),
        (leaf - 1, size * 2, HASHES[leaf - 1], good, root),
        (leaf - 1, size // 2, HASHES[leaf - 1], good, root),
        (leaf - 1, size, b"WrongLeaf", good, root),
        (leaf - 1, size, HASHES[leaf - 1], good, bytes.fromhex(EMPTY_ROOT)),
        (leaf - 1, size, HASHES[leaf - 1], good, some),
        (leaf - 1, size, HASHES[leaf - 1], [*good, b""], root),
        (leaf - 1, size, HASHES[leaf - 1], [*good, root], root),
        (leaf - 1, size, HASHES[leaf - 1], [b"", *good], root),
        (leaf - 1, size, HASHES[leaf - 1], [root, *good], root),
        (leaf - 1, size, HASHES[leaf - 1], good[:-1], root),
    ]
    for i in range(len(good)):
        flipped = list(good)
        flipped[i] = bytes([flipped[i][0] ^ 8]) + flipped[i][1:]
        wrong.append((leaf - 1, size, HASHES[leaf - 1], flipped, root))
    for index, tree_size, leaf_value, path, expected_root in wrong:
        if index >= 0:
            assert not verify_inclusion(index, tree_size, leaf_value, path, expected_root)


@pytest.mark.parametrize(("old", "new", "proof"), CONSISTENCY)
def test_consistency_vectors(old: int, new: int, proof: list[str]) -> None:
    tree = MerkleTree(HASHES[:new])
    assert [p.hex() for p in tree.consistency_proof(old, new)] == proof
    old_root, new_root = bytes.fromhex(ROOTS[old - 1]), bytes.fromhex(ROOTS[new - 1])
    good = _unhex(proof)
    assert verify_consistency(old, new, old_root, new_root, good)
    if not good:
        return
    wrong = [
        (old - 1, new, old_root, new_root, good),
        (old + 1, new, old_root, new_root, good),
        (old ^ 2, new, old_root, new_root, good),
        (old, new * 2, old_root, new_root, good),
        (old, new // 2, old_root, new_root, good),
        (old, new, b"WrongRoot", new_root, good),
        (old, new, old_root, b"WrongRoot", good),
        (old, new, new_root, old_root, good),
        (old, new, old_root, new_root, []),
        (old, new, old_root, new_root, [*good, b""]),
        (old, new, old_root, new_root, [*good, old_root]),
        (old, new, old_root, new_root, [*good, new_root]),
        (old, new, old_root, new_root, [b"", *good]),
        (old, new, old_root, new_root, [old_root, *good]),
        (old, new, old_root, new_root, [new_root, *good]),
        (old, new, old_root, new_root, [good[0], *good]),
        (old, new, old_root, new_root, good[:-1]),
    ]
    for i in range(len(good)):
        flipped = list(good)
        flipped[i] = bytes([flipped[i][0] ^ 16]) + flipped[i][1:]
        wrong.append((old, new, old_root, new_root, flipped))
    for case in wrong:
        assert not verify_consistency(*case), case


def test_trivial_consistency_cases_of_the_source() -> None:
    one, two = b"don't care 1", b"don't care 2"
    empty = bytes.fromhex(EMPTY_ROOT)
    assert not verify_consistency(0, 0, one, two, [])
    assert not verify_consistency(1, 1, one, two, [])
    assert verify_consistency(0, 0, one, one, [])
    assert verify_consistency(0, 1, one, two, [])
    assert verify_consistency(1, 1, two, two, [])
    assert not verify_consistency(1, 0, one, two, [])
    assert not verify_consistency(2, 1, one, two, [])
    assert not verify_consistency(1, 2, one, two, [])
    assert not verify_consistency(0, 0, empty, empty, [empty])
    assert not verify_consistency(0, 1, empty, empty, [empty])
    assert not verify_consistency(1, 1, empty, empty, [empty])


sizes = st.integers(min_value=1, max_value=300)


@settings(max_examples=60, deadline=None)
@given(sizes, st.data())
def test_every_inclusion_proof_verifies_and_no_other_leaf_does(
    size: int, data: st.DataObject
) -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(size)]
    tree = MerkleTree(leaves)
    root = root_of(leaves)
    assert tree.root() == root
    index = data.draw(st.integers(0, size - 1))
    proof = tree.inclusion_proof(index, size)
    assert root_from_inclusion(index, size, leaves[index], proof) == root
    other = data.draw(st.integers(0, size - 1))
    if other != index:
        assert not verify_inclusion(other, size, leaves[index], proof, root)
        assert not verify_inclusion(index, size, leaves[other], proof, root)


@settings(max_examples=60, deadline=None)
@given(sizes, st.data())
def test_every_consistency_proof_verifies_and_a_fork_does_not(
    size: int, data: st.DataObject
) -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(size)]
    tree = MerkleTree(leaves)
    old = data.draw(st.integers(0, size))
    proof = tree.consistency_proof(old, size)
    assert verify_consistency(old, size, tree.root(old), tree.root(size), proof)
    if 0 < old < size:
        # A fork: one leaf of the old tree rewritten, the rest the same.
        changed = data.draw(st.integers(0, old - 1))
        forked = MerkleTree(
            [leaf_hash(b"forged") if i == changed else h for i, h in enumerate(leaves)]
        )
        assert not verify_consistency(old, size, tree.root(old), forked.root(size), proof)
        assert not verify_consistency(
            old, size, tree.root(old), forked.root(size), forked.consistency_proof(old, size)
        )


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 200), st.integers(0, 60))
def test_a_frontier_resumes_where_it_left_off(start: int, more: int) -> None:
    leaves = [leaf_hash(i.to_bytes(4, "big")) for i in range(start + more)]
    whole = Frontier()
    for leaf in leaves[:start]:
        whole.append(leaf)
    resumed = Frontier(start, whole.hashes())
    for leaf in leaves[start:]:
        resumed.append(leaf)
    assert resumed.root() == root_of(leaves)


def test_checkpoint_signatures() -> None:
    key = Ed25519PrivateKey.generate()
    root = bytes.fromhex(ROOTS[7])
    issued = "2026-01-02T03:04:05.000000Z"
    checkpoint = {
        "size": 8,
        "root": root.hex(),
        "issuedAt": issued,
        "signature": base64.b64encode(key.sign(checkpoint_note(8, root, issued))).decode(),
    }
    public = key.public_key()
    assert verify_checkpoint(checkpoint, public)
    assert not verify_checkpoint({**checkpoint, "size": 9}, public)
    assert not verify_checkpoint({**checkpoint, "root": ROOTS[6]}, public)
    assert not verify_checkpoint({**checkpoint, "issuedAt": "2026-01-02T03:04:06.000000Z"}, public)
    assert not verify_checkpoint(checkpoint, Ed25519PrivateKey.generate().public_key())
    assert not verify_checkpoint({**checkpoint, "signature": "not base64!"}, public)


def test_the_canonical_form_is_the_payload_digests() -> None:
    value = {"b": [1, 2.5, None], "a": "é\u2028", "c": {"z": True, "y": "x"}}
    assert verify.canonical_json(value) == server_canonical_json(value)


def test_the_verifier_imports_nothing_of_signoff() -> None:
    tree = ast.parse(Path(verify.__file__).read_text())
    imported = {
        node.module if isinstance(node, ast.ImportFrom) else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (node.names if isinstance(node, ast.Import) else [None])  # type: ignore[list-item]
    }
    assert all(
        name.split(".")[0]
        in {
            "__future__",
            "base64",
            "binascii",
            "hashlib",
            "json",
            "collections",
            "dataclasses",
            "typing",
            "cryptography",
        }
        for name in imported
        if name
    ), imported


SIGNING = Ed25519PrivateKey.generate()


def _export(size: int, every: int) -> list[str]:
    """A synthetic export of ``size`` records with a signed checkpoint every ``every``."""
    lines = [verify.canonical_json({"type": "header", "format": verify.EXPORT_FORMAT})]
    frontier = Frontier()
    for position in range(size):
        entry = {"position": position, "id": f"r{position}", "action": "t.done", "details": {}}
        leaf = verify.entry_hash(entry)
        frontier.append(leaf)
        lines.append(verify.record_line(entry, leaf.hex()))
        if (position + 1) % every == 0:
            root, issued = frontier.root(), "2026-01-01T00:00:00.000000Z"
            note = checkpoint_note(position + 1, root, issued)
            checkpoint = {
                "type": "checkpoint",
                "size": position + 1,
                "root": root.hex(),
                "issuedAt": issued,
                "signature": base64.b64encode(SIGNING.sign(note)).decode(),
            }
            lines.append(verify.canonical_json(checkpoint))
    return lines


@settings(max_examples=80, deadline=None)
@given(st.integers(5, 60), st.integers(1, 7), st.data())
def test_any_one_tampered_record_is_named_or_bounded(
    size: int, every: int, data: st.DataObject
) -> None:
    """Alter, delete or swap records (leaf hashes recomputed or not): the verdict fails at
    a position no later than the tampered one and no earlier than the last checkpoint
    before it, exactly there when the stored leaf hash was left alone; past the last
    checkpoint, a rehashed record or a cut end goes unnoticed."""
    lines = _export(size, every)
    key = SIGNING.public_key()
    assert verify.verify_export(lines, key).ok
    records = [i for i, line in enumerate(lines) if line.startswith(verify.RECORD_PREFIX)]
    index = data.draw(st.sampled_from(records))
    position = records.index(index)
    how = data.draw(st.sampled_from(["alter", "alter and rehash", "delete", "swap"]))
    tampered = list(lines)
    if how.startswith("alter"):
        entry = json.loads(lines[index])["entry"]
        entry["action"] = "t.undone"
        leaf = verify.entry_hash(entry).hex() if how == "alter and rehash" else "00" * 32
        tampered[index] = verify.record_line(entry, leaf)
    elif how == "delete":
        del tampered[index]
    else:
        later = data.draw(st.sampled_from([i for i in records if i != index]))
        tampered[index], tampered[later] = tampered[later], tampered[index]
        position = min(position, records.index(later))
    verdict = verify.verify_export(tampered, key)
    uncovered = position >= size - size % every
    if uncovered and (how == "alter and rehash" or (how == "delete" and position == size - 1)):
        # After the last checkpoint nothing vouches for a record (nor for the end of the
        # log): what the log cannot prove.
        assert verdict.ok
        return
    assert not verdict.ok
    assert verdict.position is not None
    checkpointed = position - position % every
    if how == "alter and rehash":
        assert checkpointed <= verdict.position <= position, (how, verdict.summary())
    else:
        assert verdict.position == position, (how, verdict.summary())
