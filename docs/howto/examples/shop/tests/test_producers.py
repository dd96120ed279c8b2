"""The guides' enqueueing and steering code, run on the test database."""

from __future__ import annotations

import pytest

from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.operations import paused_queues
from shop import producers, tasks


@pytest.fixture(autouse=True)
def _fresh_records():
    for record in (tasks.synced, tasks.exported, tasks.charged):
        record.clear()


def test_enqueue_many_writes_every_job(sqlqueue):
    jobs = producers.enqueue_receipts([1, 2, 3])
    assert all(job.created for job in jobs)
    assert sqlqueue.run_jobs() == sqlqueue.Ran(succeeded=3)
    assert sorted(tasks.synced) == [1, 2, 3]


def test_enqueue_rows_writes_plain_rows_on_the_queue_it_names(sqlqueue):
    assert producers.backfill_receipts(range(5)) == 5
    assert (
        len(
            sqlqueue.assert_enqueued(
                tasks.send_receipt, queue="backfill", count=5
            )
        )
        == 5
    )


def test_a_unique_job_is_written_once_while_it_waits(sqlqueue):
    first = producers.request_sync(42)
    again = producers.request_sync(42)
    assert (first.created, again.created, again.pk) == (True, False, first.pk)
    assert first.unique_key == 'shop.tasks.sync_order:{"order_id":42}'
    assert sqlqueue.run_jobs() == sqlqueue.Ran(succeeded=1)
    assert producers.request_sync(
        42
    ).created  # the key is free once the job ended


def test_replace_gives_the_waiting_holder_the_new_arguments(sqlqueue):
    first = producers.request_sync_by_key(7)
    again = producers.request_sync_by_key(7)
    assert (again.created, again.pk) == (False, first.pk)
    sqlqueue.assert_enqueued(tasks.sync_order, args=[7], count=1)


def test_concurrency_keys_come_from_the_arguments_or_the_caller(sqlqueue):
    job = producers.request_export(7)
    assert (job.concurrency_key, job.concurrency_limit) == (
        'shop.tasks.export:{"tenant_id":7}',
        2,
    )
    named = producers.request_receipt_per_tenant(1, tenant_id=7)
    assert (named.concurrency_key, named.concurrency_limit) == ("tenant-7", 1)
    assert sqlqueue.run_jobs() == sqlqueue.Ran(succeeded=2)


def test_a_rate_limited_task_runs_within_its_burst(sqlqueue):
    for order_id in range(3):
        Job.objects.enqueue(tasks.charge, (order_id,))
    assert sqlqueue.run_jobs() == sqlqueue.Ran(succeeded=3)
    assert sorted(tasks.charged) == [0, 1, 2]


def test_pausing_and_resuming_the_mail_queue(db):
    assert producers.hold_mail("provider down") is True
    assert producers.hold_mail("again") is False
    assert paused_queues()["mail"].reason == "provider down"
    assert producers.release_mail() is True
    assert "mail" not in paused_queues()


def test_cancelling_a_ready_job(sqlqueue):
    job = Job.objects.enqueue(tasks.export_rows, (["a"],))
    assert producers.cancel_exports() == (1, 0)
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED
    assert sqlqueue.run_jobs() == sqlqueue.Ran()


def test_a_page_waits_for_its_thumbnails(sqlqueue):
    page = producers.publish(7, [1, 2])
    assert page.status == JobStatus.WAITING
    sqlqueue.run_jobs()
    page.refresh_from_db()
    assert (page.status, page.result) == (
        JobStatus.SUCCESSFUL,
        ["thumbs/1.jpg", "thumbs/2.jpg"],
    )
    assert tasks.exported == ["removed 7"]


def test_a_chord_and_a_chain(sqlqueue):
    page = producers.publish_with_helpers(8, [3, 4])
    steps = producers.thumbnails_one_by_one([5, 6])
    assert (page.waiting_for, [step.waiting_for for step in steps]) == (
        2,
        [0, 1],
    )
    sqlqueue.run_jobs()
    page.refresh_from_db()
    assert page.result == ["thumbs/3.jpg", "thumbs/4.jpg"]


def test_a_batch_reports_once_its_jobs_and_their_pages_are_done(sqlqueue):
    batch = producers.import_catalogue({"acme": 2, "globex": 1})
    sqlqueue.run_jobs()
    batch.refresh_from_db()
    assert (batch.total, batch.succeeded, batch.failed) == (5, 5, 0)
    assert tasks.exported[-1] == (
        "buyers@example.com: nightly catalogue import, 5 of 5 done"
    )
