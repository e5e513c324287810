"""Watching the change feed: the rules behind every subscription."""
