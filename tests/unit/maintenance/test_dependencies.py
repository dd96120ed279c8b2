"""The maintenance leader's sweep of what waits for finished or deleted jobs
(``maintenance/dependencies.py``): its pace, and a database that is away."""

from __future__ import annotations

import pytest
from django.db import OperationalError

from django_sqlqueue.db import dependencies
from django_sqlqueue.maintenance.dependencies import SWEEP_BACKLOG_SECONDS, SWEEP_SECONDS, DependenciesService
from django_sqlqueue.models import Job, JobStatus
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)  # the service closes its connections


def test_a_turn_settles_what_a_finished_parent_left_waiting() -> None:
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])
    Job.objects.filter(pk=parent.pk).update(status=JobStatus.SUCCESSFUL)
    assert DependenciesService().run(0.0) == SWEEP_SECONDS
    assert Job.objects.get(pk=child.pk).status == JobStatus.READY


def test_a_backlog_comes_back_sooner(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dependencies, "sweep", lambda model, using: dependencies.CHUNK)
    assert DependenciesService().run(0.0) == SWEEP_BACKLOG_SECONDS


def test_a_failure_is_logged_and_tried_again(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def away(model: object, using: str) -> int:
        raise OperationalError("server closed the connection")

    monkeypatch.setattr(dependencies, "sweep", away)
    assert DependenciesService().run(0.0) == SWEEP_SECONDS
    assert "Sweeping waiting jobs failed (server closed the connection)" in caplog.text
