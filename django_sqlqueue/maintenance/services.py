"""The services the lease's holder runs, in the order of a turn: rescue first (jobs back
to work), then the expired jobs ended, then the sweep of what waits for finished jobs
(an expired job counts as failed for them), then that of batches whose jobs have all
ended, then the recurring jobs, then the hours counted, then pruning (which deletes only counted hours)."""

from __future__ import annotations

from collections.abc import Callable

from django_sqlqueue.maintenance.batches import BatchesService
from django_sqlqueue.maintenance.dependencies import DependenciesService
from django_sqlqueue.maintenance.expiry import ExpiryService
from django_sqlqueue.maintenance.pruning import PruningService
from django_sqlqueue.maintenance.rescue import Rescued, RescueService
from django_sqlqueue.maintenance.rollups import RollupsService
from django_sqlqueue.maintenance.schedules import SchedulesService
from django_sqlqueue.maintenance.service import Service


def maintenance_services(rescued: Callable[[Rescued], object]) -> list[Service]:
    """A fresh set of services; ``rescued`` hears what each rescue wrote."""
    return [
        RescueService(rescued),
        ExpiryService(),
        DependenciesService(),
        BatchesService(),
        SchedulesService(),
        RollupsService(),
        PruningService(),
    ]
