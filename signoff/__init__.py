"""Signoff: a human review step between automated systems and the outside world."""

__version__ = "0.1.0"
