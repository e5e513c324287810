"""Redis keys of a test run. Redis is shared with other runs (and other engineers'), so
every arq queue and events channel a run names starts with the run's own prefix, and the
session ends by deleting what the run left under it (never FLUSHDB) and checking that
nothing is left (``tests/conftest.py``).

A run's keys: its queues (sorted sets of job ids), workers' ``<queue>:health-check``,
and arq's ``arq:job:<id>``, ``arq:retry:<id>``, ``arq:in-progress:<id>`` and
``arq:result:<id>`` for each job. Sweep and wake job ids start with the queue name; a
delivery's (``deliver:<proposal>:<attempt>``) does not, and is found through the queue
that still holds it (arq deletes a finished job's keys and its queue entry together).
"""

from __future__ import annotations

import uuid

from redis import Redis

# Made once per process: each pytest-xdist worker ("make test" runs them) has its own
# prefix, and cleans what it left under it when its session ends.
RUN_PREFIX = f"signoff:test:{uuid.uuid4().hex[:12]}"
ARQ_JOB_KEYS = ("arq:job:", "arq:retry:", "arq:in-progress:", "arq:result:")


def unique_channel() -> str:
    """An events channel of this run's own."""
    return f"{RUN_PREFIX}:{uuid.uuid4().hex}"


def unique_queue() -> str:
    """An arq queue of this run's own."""
    return f"{RUN_PREFIX}:{uuid.uuid4().hex}"


def keys_under(redis: Redis, prefix: str) -> set[bytes]:
    """Every key named for ``prefix``: the queues and health checks under it, and arq's
    keys for jobs whose id starts with it or that a queue under it holds."""
    own: set[bytes] = set(redis.scan_iter(match=f"{prefix}*", count=1000))
    jobs: set[bytes] = {
        key
        for kind in ARQ_JOB_KEYS
        for key in redis.scan_iter(match=f"{kind}{prefix}*", count=1000)
    }
    held = [
        kind.encode() + job_id
        for key in own
        if redis.type(key) == b"zset"
        for job_id in redis.zrange(key, 0, -1)
        for kind in ARQ_JOB_KEYS
    ]
    exists = redis.pipeline(transaction=False)
    for key in held:
        exists.exists(key)
    jobs.update(key for key, found in zip(held, exists.execute(), strict=True) if found)
    return own | jobs


def delete_under(url: str, prefix: str = RUN_PREFIX) -> set[bytes]:
    """Delete every key named for ``prefix``; return what is still there afterwards."""
    redis = Redis.from_url(url)
    try:
        keys = keys_under(redis, prefix)
        if keys:
            redis.unlink(*keys)
        return keys_under(redis, prefix)
    finally:
        redis.close()
