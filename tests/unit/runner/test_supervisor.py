"""The supervisor's pace of maintenance (``runner/supervisor.py``): how soon it prunes
again, how soon a follower tries to take the maintenance lease, and how long it waits
to replace processes that die young."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from django_sqlqueue.db import pruning
from django_sqlqueue.maintenance.pruning import PRUNE_BACKLOG_SECONDS, PRUNE_SECONDS, prune_again_in
from django_sqlqueue.runner.config import WorkerOptions as Options
from django_sqlqueue.runner.supervisor import STARTUP_BACKOFF_MAX, YOUNG_SECONDS, Supervisor


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


def _child(born: float, proven: bool = False) -> Any:
    return SimpleNamespace(config=SimpleNamespace(name="w"), born=born, proven=proven)


def test_the_backoff_for_young_deaths_stops_doubling_at_the_most_however_many(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A host whose workers cannot stay up for days: thousands of deaths in a row, each
    replaced after the most, and no float overflow in the supervisor's loop."""
    watcher = supervisor()
    watcher.young_deaths = 5000
    watcher._died_young(_child(0.0), "exited with status 3", "0.2 s after it started")
    (due,) = watcher.respawns
    assert due - watcher.last_young_death == pytest.approx(STARTUP_BACKOFF_MAX)
    assert "w exited with status 3 0.2 s after it started (5001 in a row): starting another in 30 s" in caplog.text


def test_young_deaths_count_from_0_again_once_a_later_process_lives_long_enough() -> None:
    watcher = supervisor()
    watcher.young_deaths, watcher.last_young_death = 3, 100.0
    watcher.children = [_child(50.0, proven=True), _child(101.0)]
    watcher._forget_young_deaths(101.0 + YOUNG_SECONDS - 1)
    assert watcher.young_deaths == 3  # the old process proves nothing; the new one is still young
    watcher._forget_young_deaths(101.0 + YOUNG_SECONDS)
    assert watcher.young_deaths == 0


def test_young_deaths_count_from_0_again_once_a_later_process_writes_an_outcome() -> None:
    watcher = supervisor()
    watcher.young_deaths, watcher.last_young_death = 3, 100.0
    watcher.children = [_child(50.0, proven=True), _child(101.0)]
    watcher._forget_young_deaths(102.0)
    assert watcher.young_deaths == 3
    watcher.children[1].proven = True
    watcher._forget_young_deaths(102.0)
    assert watcher.young_deaths == 0
