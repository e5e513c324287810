"""The per-target rate limiter's arithmetic on a simulated clock: a claimer that takes
whatever its allowance says, as soon as it says so, gets the burst at once and then
exactly the rate, never more and never less. The delivery tests check the same limiter
end to end, where a busy machine can only be bounded from one side."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from signoff.models import CircuitState, Target
from signoff.resolvers.targets.limits import BURST_SECONDS, allowance, rate_available_after

START = datetime(2026, 1, 1, tzinfo=UTC)


def target(rate: float, max_concurrency: int = 1_000) -> Target:
    return Target(
        id="t",
        name="t",
        url="http://127.0.0.1/",
        rate_per_second=rate,
        max_concurrency=max_concurrency,
        circuit_state=CircuitState.CLOSED,
    )


def claims_over(rate: float, seconds: float) -> list[tuple[float, int]]:
    """(time, taken) of every claim a greedy claimer makes within ``seconds``: it takes
    its whole allowance, then looks again when the allowance says to."""
    row, now, claims = target(rate), START, []
    end = START + timedelta(seconds=seconds)
    while now <= end:
        given = allowance(row, in_flight=0, now=now)
        if given.quota:
            claims.append(((now - START).total_seconds(), given.quota))
            row.rate_available_at = rate_available_after(row, given.quota, now)
            continue
        assert given.retry_at is not None and given.retry_at > now
        now = given.retry_at
    return claims


@pytest.mark.parametrize("rate", [0.5, 1.0, 5.0, 20.0, 100.0])
def test_a_greedy_claimer_gets_the_burst_then_exactly_the_rate(rate: float) -> None:
    seconds = 10.0
    claims = claims_over(rate, seconds)
    burst = max(1, int(rate * BURST_SECONDS))
    assert claims[0] == (0.0, burst)
    taken = sum(n for _, n in claims)
    # After the burst, one delivery each 1/rate seconds: neither faster nor slower.
    assert taken == burst + int(seconds * rate + 1e-9)
    for (earlier, _), (later, n) in itertools.pairwise(claims[1:]):
        assert later - earlier == pytest.approx(n / rate)


def test_a_claimer_that_waits_gets_no_more_than_one_burst() -> None:
    row = target(20.0)
    row.rate_available_at = rate_available_after(row, 20, START)
    later = START + timedelta(seconds=60)
    assert allowance(row, in_flight=0, now=later).quota == 20


def test_concurrency_caps_what_the_rate_allows() -> None:
    assert allowance(target(100.0, max_concurrency=3), in_flight=1, now=START).quota == 2
