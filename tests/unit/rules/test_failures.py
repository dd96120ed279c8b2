"""What a failed attempt becomes (``rules/failures.py``): the backoff before a retry."""

from __future__ import annotations

import pytest
from django.test import override_settings

from django_sqlqueue.rules.failures import retry_delay


def test_retry_delay_doubles_within_its_jitter_window() -> None:
    # Defaults: 10 s, doubling, at most an hour.
    for attempt, ceiling in [(1, 10), (2, 20), (3, 40), (4, 80), (8, 1280), (9, 2560), (10, 3600), (30, 3600)]:
        delays = [retry_delay(attempt).total_seconds() for _ in range(300)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays), (attempt, min(delays), max(delays))
        # Spread over the whole upper half, so jobs that failed together do not retry together.
        assert min(delays) < ceiling * 0.6
        assert max(delays) > ceiling * 0.9
        assert len(set(delays)) > 250


@override_settings(SQLQUEUE_RETRY_BACKOFF=0.5, SQLQUEUE_RETRY_BACKOFF_MAX=3)
def test_retry_delay_follows_the_settings() -> None:
    for attempt, ceiling in [(1, 0.5), (2, 1), (3, 2), (4, 3), (5, 3)]:
        delays = [retry_delay(attempt).total_seconds() for _ in range(100)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)


@override_settings(SQLQUEUE_RETRY_BACKOFF=5, SQLQUEUE_RETRY_BACKOFF_MAX=5)
def test_retry_delay_with_backoff_equal_to_its_max() -> None:
    assert all(2.5 <= retry_delay(attempt).total_seconds() <= 5 for attempt in (1, 2, 10))


@pytest.mark.parametrize("attempt", [1030, 5000])
def test_retry_delay_of_a_job_retried_for_ever_stays_capped(attempt: int) -> None:
    # max_attempts has no upper bound, so attempt counts past 1024 (2**1024 overflows a float) happen.
    assert 1800 <= retry_delay(attempt).total_seconds() <= 3600
