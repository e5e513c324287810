"""The per-token token bucket, on a clock the test moves."""

from __future__ import annotations

from signoff.web.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_refills_at_the_rate_and_tokens_do_not_share_it() -> None:
    clock = Clock()
    limiter = RateLimiter(2.0, 2, clock=clock)
    assert [limiter.retry_after("a") for _ in range(2)] == [None, None]
    assert limiter.retry_after("a") == 0.5
    assert limiter.retry_after("b") is None
    clock.now += 0.5
    assert limiter.retry_after("a") is None
    assert limiter.retry_after("a") == 0.5


def test_a_zero_rate_is_no_limit_and_buckets_are_bounded() -> None:
    assert all(RateLimiter(0, 1).retry_after("a") is None for _ in range(100))
    clock = Clock()
    limiter = RateLimiter(1.0, 1, max_keys=2, clock=clock)
    for token in ("a", "b", "c"):
        assert limiter.retry_after(token) is None
    assert len(limiter._buckets) == 2
    assert limiter.retry_after("a") is None  # forgotten, so a full bucket again


def test_a_bucket_a_hair_short_of_a_request_asks_for_a_millisecond_not_zero() -> None:
    """The wait is rounded up: rounded to the nearest millisecond, a bucket that had
    refilled to within half a millisecond of a request told its client "retry after 0"."""
    clock = Clock()
    limiter = RateLimiter(4.0, 1, clock=clock)
    assert limiter.retry_after("a") is None
    clock.now += 0.25 - 1e-7
    assert limiter.retry_after("a") == 0.001
    clock.now += 0.05
    assert limiter.retry_after("a") is None
    assert limiter.retry_after("a") == 0.25
