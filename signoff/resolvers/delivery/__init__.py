"""Delivering approved actions: claims, outcomes, retries, asynchronous results, reconciliation."""
