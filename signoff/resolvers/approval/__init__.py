"""Proposals and their review: queues, tasks, decisions, amendments, bulk decisions,
approval policies and compensation."""
