"""Targets: registering and retiring them, their limits, health and circuit breaker."""
