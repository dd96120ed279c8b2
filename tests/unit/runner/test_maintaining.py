"""The maintenance lease's pace: a leader renews it every third of the lease, a
follower tries as the holder's runs out."""

from __future__ import annotations

import datetime

import pytest
from django.db import DEFAULT_DB_ALIAS

from django_sqlqueue.conf import conf
from django_sqlqueue.db import leadership
from django_sqlqueue.runner.maintaining import LEAD_SECONDS, TAKEOVER_MARGIN_SECONDS, Maintenance


def maintenance(holder: str = "here:1") -> Maintenance:
    return Maintenance(holder, counted=lambda rescued: None, by="the test")


@pytest.mark.django_db(transaction=True)  # the services close their connections
def test_the_leader_renews_every_third_of_the_lease() -> None:
    leader = maintenance()
    assert leader.lead() == min(conf.SQLQUEUE_LEASE / 3, LEAD_SECONDS)
    assert leader.leading


@pytest.mark.django_db(transaction=True)
def test_a_follower_tries_again_as_the_holders_lease_runs_out() -> None:
    assert leadership.acquire("elsewhere:1", datetime.timedelta(seconds=2), DEFAULT_DB_ALIAS)
    follower = maintenance()
    # Not a third of the lease later (10 s by default): 2 s, as the holder's lease ends.
    assert follower.lead() == pytest.approx(2 + TAKEOVER_MARGIN_SECONDS, abs=0.5)
    assert not follower.leading


@pytest.mark.django_db(transaction=True)
def test_stepping_down_gives_the_lease_to_the_next_at_once() -> None:
    leader = maintenance("here:1")
    leader.lead()
    leader.step_down()
    assert not leader.leading
    assert maintenance("there:2").lead() == min(conf.SQLQUEUE_LEASE / 3, LEAD_SECONDS)
