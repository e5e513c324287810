"""Live events: the change feed's sequencer, the event hub and its transports, the relay."""

from signoff.events.hub import Change, EventHub, Subscriber
from signoff.events.service import EventService, create_event_service

__all__ = ["Change", "EventHub", "EventService", "Subscriber", "create_event_service"]
