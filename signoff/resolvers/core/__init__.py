"""The room every other shares: the unit of work, the transition tables and their one way
of moving, idempotency, pagination, audit reads and global ids."""
