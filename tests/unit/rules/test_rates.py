"""``SQLQUEUE_RATE_LIMITS`` values (``rates.py``): what each spelling means, and the
errors that say how to write one."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_sqlqueue.conf import conf
from django_sqlqueue.rules.rates import Rate, parse_rate
from django_sqlqueue.rules.registry import job


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("25/s", Rate(25.0, 25)),
        ("120/m", Rate(2.0, 2)),
        ("90/h", Rate(0.025, 1)),
        (" 0.5 / s ", Rate(0.5, 1)),
        ("20/s burst 5", Rate(20.0, 5)),
    ],
)
def test_rates_and_their_default_burst_of_one_second(text: str, rate: Rate) -> None:
    assert parse_rate("payments", text) == rate


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        ("p", "25/d", "rate limit 'p' must read like '25/s', '100/m' or '1000/h burst 5', not '25/d'"),
        ("p", 25, "rate limit 'p' must read like '25/s', '100/m' or '1000/h burst 5', not 25"),
        ("p", "0/s", "rate limit 'p' must read like"),
        ("p", "5/s burst 0", "rate limit 'p' needs a burst of at least 1, not 0"),
        ("", "5/s", "a rate limit's name must be a string of 1 to 100 characters, not ''"),
    ],
)
def test_bad_rates_say_how_to_write_them(name: str, text: object, problem: str) -> None:
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(").replace(")", r"\)")):
        parse_rate(name, text)


def test_the_setting_is_read_and_checked_on_each_access() -> None:
    with override_settings(SQLQUEUE_RATE_LIMITS={"payments": "25/s"}):
        assert {"payments": Rate(25.0, 25)} == conf.SQLQUEUE_RATE_LIMITS
    with override_settings(SQLQUEUE_RATE_LIMITS=["25/s"]), pytest.raises(ImproperlyConfigured, match="a dict"):
        conf.SQLQUEUE_RATE_LIMITS  # noqa: B018


def test_a_rate_limit_that_is_not_a_name_is_refused_by_the_decorator() -> None:
    def task() -> None: ...

    task.__qualname__ = "task"
    with pytest.raises(ImproperlyConfigured, match="rate_limit must name an entry of SQLQUEUE_RATE_LIMITS, not 25"):
        job(rate_limit=25)(task)  # type: ignore[call-overload]
