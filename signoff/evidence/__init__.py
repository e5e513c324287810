"""Evidence of oversight and the keys behind it: the audit log's verifier (``verify``:
Merkle tree, checkpoints, proofs, receipts), the key that signs checkpoints
(``audit_key``), encryption at rest for the secrets Signoff reads back (``sealing``),
and the ``signoff audit`` commands (``commands``).

``verify`` stands alone (no import of the server) so an auditor can read and run it;
``sealing`` and ``audit_key`` import nothing of Signoff beyond this package, so every layer
may use them.
"""
