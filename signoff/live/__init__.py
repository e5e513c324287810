"""The live runtime: subscriptions served over websockets.

``websocket`` (the two protocols, one ordered writer per connection), ``broadcast``
(groups that execute each event's frame once for everyone who sees the same, and the
life of each subscription in them), ``selection`` (what keys a group), ``rendering``
(per-event execution), ``history`` (a group's newest frames, for resumes) and
``prepared_frames`` (a frame framed once, written to every socket). The subscription
fields reach it only through ``schema.live.LiveSocket``.
"""
