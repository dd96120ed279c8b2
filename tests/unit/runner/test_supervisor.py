"""The supervisor's pace of maintenance (``runner/supervisor.py``): how soon it prunes
again, and how soon a follower tries to take the maintenance lease."""

from __future__ import annotations

import datetime

import pytest
from django.db import DEFAULT_DB_ALIAS

from django_sqlqueue.conf import conf
from django_sqlqueue.db import leadership, pruning
from django_sqlqueue.maintenance.pruning import PRUNE_BACKLOG_SECONDS, PRUNE_SECONDS, prune_again_in
from django_sqlqueue.runner.config import WorkerOptions as Options
from django_sqlqueue.runner.supervisor import LEAD_SECONDS, TAKEOVER_MARGIN_SECONDS, Supervisor


def test_nothing_left_to_prune_waits_the_interval() -> None:
    assert prune_again_in(5.0, complete=True) == PRUNE_SECONDS


def test_a_backlog_is_pruned_again_after_a_second_while_turns_are_quick() -> None:
    assert prune_again_in(0.05, complete=False) == PRUNE_BACKLOG_SECONDS


def test_slow_turns_keep_pruning_to_its_duty_cycle() -> None:
    # A turn of 2 s (a big table, a loaded database) is followed by three times as long.
    assert prune_again_in(2.0, complete=False) == pytest.approx(2.0 * (1 - pruning.DUTY_CYCLE) / pruning.DUTY_CYCLE)
    assert pruning.DUTY_CYCLE == 0.25


def supervisor() -> Supervisor:
    options = Options(
        queues=None, processes=1, threads=1, batch_size=10, burst=False, max_jobs=None, name_prefix="", log_level=0
    )
    return Supervisor(options, write=print, progress_bar=False)


@pytest.mark.django_db(transaction=True)  # the supervisor closes its connections
def test_the_leader_renews_every_third_of_the_lease() -> None:
    leader = supervisor()
    assert leader._lead() == min(conf.SQLQUEUE_LEASE / 3, LEAD_SECONDS)
    assert leader.leading


@pytest.mark.django_db(transaction=True)  # the supervisor closes its connections
def test_a_follower_tries_again_as_the_holders_lease_runs_out() -> None:
    assert leadership.acquire("elsewhere:1", datetime.timedelta(seconds=2), DEFAULT_DB_ALIAS)
    follower = supervisor()
    # Not a third of the lease later (10 s by default): 2 s, as the holder's lease ends.
    assert follower._lead() == pytest.approx(2 + TAKEOVER_MARGIN_SECONDS, abs=0.5)
    assert not follower.leading
