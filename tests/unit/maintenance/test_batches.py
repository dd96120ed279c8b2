"""The batches' sweep as the maintenance leader runs it (``maintenance/batches.py``)."""

from __future__ import annotations

from unittest import mock

import pytest
from django.db import OperationalError

from django_sqlqueue.db import batches
from django_sqlqueue.maintenance.batches import SWEEP_BACKLOG_SECONDS, SWEEP_SECONDS, BatchesService
from django_sqlqueue.models import Job, JobBatch
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)  # the service closes its connections


def test_a_turn_completes_a_batch_whose_jobs_were_deleted_before_they_finished() -> None:
    with Job.objects.batch(on_finish=noop) as batch:
        job = Job.objects.enqueue(noop)
    Job.objects.filter(pk=job.pk).delete()  # as the admin's Delete does: no end counted
    assert JobBatch.objects.get(pk=batch.pk).finished_at is None
    assert BatchesService().run(0.0) == SWEEP_SECONDS
    batch = JobBatch.objects.get(pk=batch.pk)
    assert (batch.failed, set(batch.callback_jobs)) == (1, {"on_finish"})


def test_a_full_turn_comes_back_soon_and_a_failing_one_later(caplog: pytest.LogCaptureFixture) -> None:
    with mock.patch.object(batches, "sweep", return_value=batches.SWEEP_LIMIT):
        assert BatchesService().run(0.0) == SWEEP_BACKLOG_SECONDS
    with mock.patch.object(batches, "sweep", side_effect=OperationalError("gone")):
        assert BatchesService().run(0.0) == SWEEP_SECONDS
    assert "Sweeping batches failed (gone)" in caplog.text
