"""arq's own cost per job, measured with a job that does nothing: what one delivery job
costs Signoff's worker beyond the delivery itself, and how the poll delay and
``max_jobs`` bound the time from enqueue to start.

    python bench/arq_overhead.py --redis-url redis://127.0.0.1:6379/0

Prints, for each ``max_jobs`` and poll delay: jobs/s through one worker, CPU
milliseconds per job (enqueue and run, both in this process), Redis commands per job,
and the p50/p99 time from enqueue to the job starting when jobs arrive one at a time.
Figures in docs/delivery-throughput.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from typing import Any

from arq import func
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.worker import Worker

started: dict[str, float] = {}
waiting = {"count": 0}
all_started = asyncio.Event()


async def noop(ctx: dict[str, Any], key: str) -> None:
    started[key] = time.time()
    if len(started) >= waiting["count"]:
        all_started.set()


def expect(n: int) -> None:
    started.clear()
    all_started.clear()
    waiting["count"] = n


async def redis_calls(redis: ArqRedis) -> int:
    stats = await redis.info("commandstats")
    return sum(int(entry["calls"]) for entry in stats.values())


def worker(redis: ArqRedis, queue: str, max_jobs: int, poll_delay: float) -> Worker:
    return Worker(
        functions=[func(noop, name="noop", keep_result=0)],
        redis_pool=redis,
        queue_name=queue,
        max_jobs=max_jobs,
        poll_delay=poll_delay,
        handle_signals=False,
        keep_result=0,
    )


async def throughput(redis: ArqRedis, n: int, max_jobs: int, poll_delay: float) -> str:
    """Enqueue ``n`` jobs, then drain them with one worker."""
    queue = f"signoff:bench:arq:{uuid.uuid4().hex[:8]}"
    expect(n)
    calls, cpu = await redis_calls(redis), time.process_time()
    for i in range(n):
        await redis.enqueue_job("noop", f"t{i}", _job_id=f"t{i}", _queue_name=queue)
    enqueue_cpu = time.process_time() - cpu
    runner = worker(redis, queue, max_jobs, poll_delay)
    task = asyncio.create_task(runner.async_run())
    begin, cpu = time.time(), time.process_time()
    await all_started.wait()
    elapsed, run_cpu = time.time() - begin, time.process_time() - cpu
    await runner.close()
    task.cancel()
    per_job = await redis_calls(redis) - calls
    return (
        f"{n / elapsed:7.0f} jobs/s  cpu {1000 * (enqueue_cpu + run_cpu) / n:5.2f} ms/job "
        f"(enqueue {1000 * enqueue_cpu / n:4.2f})  redis {per_job / n:5.1f} commands/job"
    )


async def latency(redis: ArqRedis, n: int, max_jobs: int, poll_delay: float) -> str:
    """Jobs enqueued one at a time, 20 ms apart: enqueue to start."""
    queue = f"signoff:bench:arq:{uuid.uuid4().hex[:8]}"
    runner = worker(redis, queue, max_jobs, poll_delay)
    task = asyncio.create_task(runner.async_run())
    await asyncio.sleep(0.2)
    expect(n)
    enqueued: dict[str, float] = {}
    for i in range(n):
        key = f"l{i}"
        enqueued[key] = time.time()
        await redis.enqueue_job("noop", key, _job_id=key, _queue_name=queue)
        await asyncio.sleep(0.02)
    await all_started.wait()
    await runner.close()
    task.cancel()
    waits = sorted((started[k] - enqueued[k]) * 1000 for k in enqueued)
    p99 = waits[int(len(waits) * 0.99) - 1]
    return f"enqueue -> start p50 {statistics.median(waits):5.1f} ms, p99 {p99:5.1f} ms"


async def run(url: str, n: int) -> None:
    redis = await create_pool(RedisSettings.from_dsn(url))
    try:
        for max_jobs in (10, 20, 50):
            for poll_delay in (0.05, 0.1, 0.5):
                figures = await throughput(redis, n, max_jobs, poll_delay)
                waits = await latency(redis, 200, max_jobs, poll_delay)
                print(f"max_jobs {max_jobs:3d} poll {poll_delay:4.2f} s: {figures}; {waits}")
    finally:
        await redis.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument("-n", type=int, default=3000)
    args = parser.parse_args()
    asyncio.run(run(args.redis_url, args.n))


if __name__ == "__main__":
    main()
