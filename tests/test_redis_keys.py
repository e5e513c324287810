"""The run's clean-up of the shared Redis (``tests/redis_keys.py``): a queue, its
health check and its jobs' keys go, delivery jobs (whose ids do not name the queue)
included, and nothing under another prefix."""

from __future__ import annotations

import uuid

from arq.connections import RedisSettings, create_pool
from redis import Redis

from signoff.constants import DELIVER_JOB
from signoff.resolvers.core.work import delivery_job_id, wake_job_id
from tests.conftest import REDIS_URL, requires_redis
from tests.redis_keys import RUN_PREFIX, delete_under, keys_under


@requires_redis
async def test_a_runs_queues_and_jobs_are_deleted_and_nothing_else() -> None:
    assert REDIS_URL is not None
    mine, other = (f"{RUN_PREFIX}:{name}-{uuid.uuid4().hex[:8]}" for name in ("mine", "other"))
    pool = await create_pool(RedisSettings.from_dsn(REDIS_URL))
    try:
        for prefix in (mine, other):
            queue, proposal = f"{prefix}:queue", uuid.uuid4().hex
            for job_id in (delivery_job_id(proposal, 1), wake_job_id(queue, 0)):
                await pool.enqueue_job(DELIVER_JOB, proposal, _job_id=job_id, _queue_name=queue)
            await pool.set(f"{queue}:health-check", b"up")
    finally:
        await pool.aclose()

    redis = Redis.from_url(REDIS_URL)
    try:
        found = {key.decode() for key in keys_under(redis, mine)}
        assert {key.removeprefix(mine) for key in found if key.startswith(mine)} == {
            ":queue",
            ":queue:health-check",
        }
        jobs = sorted(key for key in found if key.startswith("arq:job:"))
        assert len(jobs) == 2 and jobs[0].startswith("arq:job:deliver:"), found
        assert jobs[1].startswith(f"arq:job:{mine}:queue:wake:")

        assert delete_under(REDIS_URL, mine) == set()
        assert not any(redis.exists(key) for key in found)
        assert len(keys_under(redis, other)) == 4
        assert delete_under(REDIS_URL, other) == set()
    finally:
        redis.close()
