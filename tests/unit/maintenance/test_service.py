"""The pace every maintenance service keeps (``maintenance/service.py``), and the
services the lease's holder runs, in their order (``maintenance/services.py``)."""

from __future__ import annotations

import pytest

from django_sqlqueue.maintenance.batches import BatchesService
from django_sqlqueue.maintenance.dependencies import DependenciesService
from django_sqlqueue.maintenance.expiry import ExpiryService
from django_sqlqueue.maintenance.pruning import PruningService
from django_sqlqueue.maintenance.rescue import Rescued, RescueService
from django_sqlqueue.maintenance.rollups import RollupsService
from django_sqlqueue.maintenance.schedules import SchedulesService
from django_sqlqueue.maintenance.service import Service
from django_sqlqueue.maintenance.services import maintenance_services


class Counted(Service):
    """Runs by counting, and asks for the next turn after ``again`` seconds."""

    name = "counted"
    interval = 5.0

    def __init__(self, again: float) -> None:
        super().__init__()
        self.again = again
        self.turns: list[float] = []

    def run(self, now: float) -> float:
        self.turns.append(now)
        return self.again


def test_a_service_runs_at_once_then_when_its_turn_says() -> None:
    service = Counted(again=5.0)
    assert service.run_due(100.0)
    assert not service.run_due(104.9)
    assert service.run_due(105.0)
    assert service.turns == [100.0, 105.0]


class Raising(Counted):
    """Raises at its first turn, as a turn calling user code that raises would."""

    def run(self, now: float) -> float:
        if not self.turns:
            self.turns.append(now)
            raise LookupError("no request here")
        return super().run(now)


def test_a_turn_that_raises_is_logged_and_tried_again_after_the_interval(caplog: pytest.LogCaptureFixture) -> None:
    service = Raising(again=1.0)
    assert service.run_due(100.0)
    assert "The maintenance service 'counted' raised: trying again in 5 s" in caplog.text
    assert "LookupError: no request here" in caplog.text
    assert not service.run_due(104.9)
    assert service.run_due(105.0)
    assert service.turns == [100.0, 105.0]


def test_due_now_brings_the_next_turn_forward() -> None:
    service = Counted(again=60.0)
    service.run_due(100.0)
    assert not service.run_due(101.0)
    service.due_now(101.0)
    assert service.run_due(101.0)
    assert service.turns == [100.0, 101.0]


def test_the_holder_runs_rescue_expiry_the_sweeps_schedules_rollups_then_pruning() -> None:
    heard: list[Rescued] = []
    services = maintenance_services(heard.append)
    kinds = [
        *(RescueService, ExpiryService, DependenciesService, BatchesService),
        *(SchedulesService, RollupsService, PruningService),
    ]
    assert [type(service) for service in services] == kinds
    names = ["rescue", "expiry", "dependencies", "batches", "schedules", "rollups", "pruning"]
    assert [service.name for service in services] == names
    assert isinstance(services[0], RescueService)
    assert services[0].counted == heard.append
