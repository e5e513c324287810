"""Evidence of oversight: the audit log's Merkle tree, checkpoints, proofs and receipts.

``verify`` stands alone (no import of the server) so an auditor can read and run it.
"""
