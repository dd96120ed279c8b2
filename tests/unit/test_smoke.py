"""The shortest path through the queue: enqueue a job, claim it."""

from __future__ import annotations

import pytest

from django_sqlqueue.models import Job
from tests.testapp.tasks import noop


@pytest.mark.django_db
def test_enqueue_and_claim_round_trip() -> None:
    job = Job.objects.enqueue(noop, (1,))
    claimed = Job.objects.claim(worker_id="w")
    assert [j.pk for j in claimed] == [job.pk]
