"""Drafts: prepared, edited, reserved and dispatched once."""
