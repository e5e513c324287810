"""The MCP tests use the client tests' stage: a delivering server, a target, tokens."""

from __future__ import annotations

from tests.client.conftest import delivering_server as delivering_server
from tests.client.conftest import result_stage as result_stage
from tests.client.conftest import stage as stage
