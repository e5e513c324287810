"""The live runtime: subscriptions served over websockets and Server-Sent Events.

``websocket`` and ``sse`` (the protocols, one ordered writer per connection or stream),
``broadcast`` (groups that execute each event's frame once for everyone who sees the same),
``selection`` (what keys a group), ``rendering`` (per-event execution), ``history`` (a
group's newest frames, for resumes) and ``prepared_frames`` (a frame framed once, written
to every socket). The subscription fields reach it only through ``schema.live.LiveSocket``.
"""
