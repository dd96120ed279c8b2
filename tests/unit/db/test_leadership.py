"""The maintenance lease (``db/leadership.py``): one holder at a time, renewed by it,
taken over once expired, on the database's clock."""

from __future__ import annotations

import datetime

import pytest
from django.db import DEFAULT_DB_ALIAS
from django.utils import timezone

from django_sqlqueue.db import leadership
from django_sqlqueue.models import Leader

pytestmark = pytest.mark.django_db

DB = DEFAULT_DB_ALIAS
LEASE = datetime.timedelta(seconds=60)


def expire() -> None:
    Leader.objects.update(expires_at=timezone.now() - datetime.timedelta(seconds=1))


def test_the_first_to_ask_takes_it_and_others_do_not() -> None:
    assert leadership.acquire("a:1", LEASE, DB)
    assert not leadership.acquire("b:2", LEASE, DB)
    leader = leadership.current(DB)
    assert leader is not None
    assert leader.holder == "a:1"
    assert leader.expires_at - leader.acquired_at == LEASE


def test_the_holder_renews_it_keeping_when_it_took_it() -> None:
    assert leadership.acquire("a:1", LEASE, DB)
    taken = Leader.objects.get()
    Leader.objects.update(expires_at=taken.acquired_at + datetime.timedelta(seconds=1))
    assert leadership.acquire("a:1", LEASE, DB)
    renewed = Leader.objects.get()
    assert renewed.acquired_at == taken.acquired_at
    assert renewed.expires_at >= taken.expires_at


def test_an_expired_lease_is_taken_over() -> None:
    assert leadership.acquire("a:1", LEASE, DB)
    expire()
    assert leadership.current(DB) is None
    assert leadership.acquire("b:2", LEASE, DB)
    assert not leadership.acquire("a:1", LEASE, DB)
    assert Leader.objects.get().holder == "b:2"


def test_release_lets_another_take_it_at_once() -> None:
    assert leadership.acquire("a:1", LEASE, DB)
    leadership.release("b:2", DB)  # not the holder: nothing
    assert not leadership.acquire("b:2", LEASE, DB)
    leadership.release("a:1", DB)
    assert leadership.acquire("b:2", LEASE, DB)


def test_expires_in_says_when_a_follower_may_take_it_over() -> None:
    assert leadership.expires_in(DB) is None
    assert leadership.acquire("a:1", LEASE, DB)
    left = leadership.expires_in(DB)
    assert left is not None
    assert LEASE.total_seconds() - 5 < left <= LEASE.total_seconds()
    expire()
    left = leadership.expires_in(DB)
    assert left is not None
    assert left < 0
