"""Code that enqueues and steers the shop's jobs, as a project's views,
commands and scripts would. Each guide includes the functions it explains."""

from __future__ import annotations

from collections.abc import Iterable

from django_sqlqueue import pause_queue, resume_queue, workflows
from django_sqlqueue.managers import CancelCount
from django_sqlqueue.models import Job, JobBatch
from shop.tasks import (
    export,
    import_supplier,
    make_thumbnail,
    publish_album,
    remove_uploads,
    report_import,
    send_receipt,
    sync_order,
)


def enqueue_receipts(order_ids: Iterable[int]) -> list[Job]:
    # A generator: built inside enqueue_many, with the garbage collector paused.
    jobs = (Job.objects.build(send_receipt, args=(pk,)) for pk in order_ids)
    return Job.objects.enqueue_many(jobs)  # batch_size=1000; all or nothing


def backfill_receipts(order_ids: Iterable[int]) -> int:
    # Any iterable of (task, args, kwargs), read as it is written; the options
    # (queue, priority, run_at, delay, max_attempts, timeout) apply to each row.
    rows = ((send_receipt, (pk,), None) for pk in order_ids)
    return Job.objects.enqueue_rows(rows, queue="backfill")  # how many


def request_sync(order_id: int) -> Job:
    # The key: 'shop.tasks.sync_order:{"order_id":42}'
    job = Job.objects.enqueue(sync_order, (order_id,))
    if not job.created:
        ...  # job is the ready or running job that already holds the key
    return job


def request_sync_by_key(order_id: int) -> Job:
    return Job.objects.enqueue(
        sync_order,
        (order_id,),
        unique_key=f"order-{order_id}",
        on_conflict="replace",
    )


def request_export(tenant_id: int) -> Job:
    # The key: 'shop.tasks.export:{"tenant_id":7}', its limit 2
    return Job.objects.enqueue(export, (tenant_id,))


def request_receipt_per_tenant(order_id: int, tenant_id: int) -> Job:
    return Job.objects.enqueue(
        send_receipt,
        (order_id,),
        concurrency_key=f"tenant-{tenant_id}",  # any key you name
        concurrency_limit=1,
    )


def hold_mail(reason: str) -> bool:
    return pause_queue("mail", reason=reason)  # False if it was paused


def release_mail() -> bool:
    return resume_queue("mail")  # False if it was not paused


def cancel_exports() -> CancelCount:
    exports = Job.objects.filter(task="shop.tasks.export_rows")  # or ids
    # CancelCount(cancelled=READY jobs now CANCELLED,
    #             requested=RUNNING jobs asked to stop)
    return Job.objects.cancel(exports)


def publish(album_id: int, image_ids: Iterable[int]) -> Job:
    thumbnails = Job.objects.enqueue_many(
        [Job.objects.build(make_thumbnail, (pk,)) for pk in image_ids]
    )
    page = Job.objects.enqueue(publish_album, (album_id,), after=thumbnails)
    # Runs even if a thumbnail failed for good (the page is then cancelled).
    Job.objects.enqueue(
        remove_uploads, (album_id,), after=[page], after_failure="run"
    )
    return page


def publish_with_helpers(album_id: int, image_ids: list[int]) -> Job:
    # A chord: a group of jobs, then one after them all.
    _, page = workflows.chord(
        [Job.objects.build(make_thumbnail, (pk,)) for pk in image_ids],
        then=Job.objects.build(publish_album, (album_id,)),
    )
    return page


def thumbnails_one_by_one(image_ids: list[int]) -> list[Job]:
    # A chain: each step after the one before.
    steps = [Job.objects.build(make_thumbnail, (pk,)) for pk in image_ids]
    return workflows.chain(steps)


def import_catalogue(suppliers: dict[str, int]) -> JobBatch:
    with Job.objects.batch(
        on_success=(report_import, ("buyers@example.com",)),
        on_failure=(report_import, ("oncall@example.com",)),
        description="nightly catalogue import",
    ) as batch:
        # Every job enqueued in the block joins the batch.
        for supplier, pages in suppliers.items():
            Job.objects.enqueue(import_supplier, (supplier, pages))
    return batch
