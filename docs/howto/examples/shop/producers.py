"""Code that enqueues and steers the shop's jobs, as a project's views, commands and
scripts would. Each guide includes the functions it explains."""

from __future__ import annotations

from collections.abc import Iterable

from django_sqlqueue import pause_queue, resume_queue
from django_sqlqueue.managers import CancelCount
from django_sqlqueue.models import Job
from shop.tasks import export, send_receipt, sync_order


def enqueue_receipts(order_ids: Iterable[int]) -> list[Job]:
    jobs = [Job.objects.build(send_receipt, args=(pk,)) for pk in order_ids]
    return Job.objects.enqueue_many(jobs)  # batch_size=1000; all or nothing


def backfill_receipts(order_ids: Iterable[int]) -> int:
    return Job.objects.enqueue_rows(
        ((send_receipt, (pk,), None) for pk in order_ids),  # any iterable; read as it is written
        queue="backfill",  # optional: queue, priority, run_at, delay, max_attempts, timeout
    )  # batch_size=1000 rows an INSERT; returns how many jobs were written


def request_sync(order_id: int) -> Job:
    job = Job.objects.enqueue(sync_order, (order_id,))  # key 'shop.tasks.sync_order:{"order_id":42}'
    if not job.created:
        ...  # job is the ready or running job that already holds the key
    return job


def request_sync_by_key(order_id: int) -> Job:
    return Job.objects.enqueue(sync_order, (order_id,), unique_key=f"order-{order_id}", on_conflict="replace")


def request_export(tenant_id: int) -> Job:
    return Job.objects.enqueue(export, (tenant_id,))  # key 'shop.tasks.export:{"tenant_id":7}', limit 2


def request_receipt_per_tenant(order_id: int, tenant_id: int) -> Job:
    return Job.objects.enqueue(
        send_receipt, (order_id,), concurrency_key=f"tenant-{tenant_id}", concurrency_limit=1
    )  # any key you name


def hold_mail(reason: str) -> bool:
    return pause_queue("mail", reason=reason)  # True; False if it was paused already


def release_mail() -> bool:
    return resume_queue("mail")  # True; False if it was not paused


def cancel_exports() -> CancelCount:
    # CancelCount(cancelled=READY jobs now CANCELLED, requested=RUNNING jobs asked to stop)
    return Job.objects.cancel(Job.objects.filter(task="shop.tasks.export_rows"))  # or a list of ids
