"""The shop's tasks: an installed app's ``tasks.py``, which ``runworkers``
imports. Each guide includes the tasks it explains."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.mail import send_mail

from django_sqlqueue import current_job, job
from django_sqlqueue.exceptions import Snooze
from django_sqlqueue.models import Job

# [django-task-import]
try:
    from django.tasks import task
except ImportError:  # Django 5.2: the django-tasks backport
    from django_tasks import task  # type: ignore[no-redef]
# [/django-task-import]

#: What the tasks below write, so that the guides' tests can see them run.
synced: list[int] = []
exported: list[str] = []
charged: list[int] = []
shipped: list[int] = []
#: The orders the warehouse has packed: what ``ship_when_packed`` waits for.
packed: set[int] = set()


@job(queue="mail")
def send_welcome(user_id: int) -> None:
    user = User.objects.get(pk=user_id)
    send_mail("Welcome", "Glad to have you.", None, [user.email])


@job
def send_receipt(order_id: int) -> None:
    synced.append(order_id)


@job(unique=("order_id",))  # the key: the task's name and order_id's value
def sync_order(order_id: int, note: str = "") -> None:
    synced.append(order_id)


@job(concurrency=("tenant_id",), concurrency_limit=2)
def export(tenant_id: int, fmt: str = "csv") -> None:
    exported.append(f"{tenant_id}.{fmt}")


@job(rate_limit="payments")
def charge(order_id: int) -> None:
    charged.append(order_id)


@job(max_snoozes=120)  # two hours of checks, a minute apart
def ship_when_packed(order_id: int) -> None:
    if order_id not in packed:
        raise Snooze(60)  # again in a minute; this attempt is not counted
    shipped.append(order_id)


@job
def export_rows(rows: list[str]) -> int:
    handle = current_job()  # None outside a job
    assert handle is not None
    for done, row in enumerate(rows, 1):
        handle.raise_if_cancelled()  # JobCancelled once someone cancelled it
        exported.append(row)
        handle.report_progress(done, len(rows), message=f"row {done}")
    return len(rows)


@task(priority=10, queue_name="reports")
def build_report(kind: str) -> dict[str, int]:
    return {"rows": 42}


# The recurring jobs of mysite/recurring.py (the scheduling guide).
@job
def nightly_report(kind: str) -> None:
    exported.append(kind)


@job
def ping() -> None:
    pass


@job
def sync_stock() -> None:
    synced.append(0)


# The workflows guide: thumbnails side by side, then one album page from them.
@job
def make_thumbnail(image_id: int) -> str:
    return f"thumbs/{image_id}.jpg"


@job
def publish_album(album_id: int) -> list[str]:
    handle = current_job()
    assert handle is not None
    # {job id as a string: what it returned}, for every job this one waited for.
    thumbnails = handle.dependency_results()
    return sorted(thumbnails.values())


@job
def remove_uploads(album_id: int) -> None:
    exported.append(f"removed {album_id}")


#: How many times each job of ``fetch_rates`` ran, by job id.
fetched: dict[int, int] = {}


@job(max_attempts=1)
def fetch_rates(timeouts: int = 0) -> dict[str, float]:
    """Times out on its first ``timeouts`` runs."""
    handle = current_job()
    assert handle is not None
    fetched[handle.id] = runs = fetched.get(handle.id, 0) + 1
    if runs <= timeouts:
        raise TimeoutError("the rates service did not answer")
    return {"EUR": 1.0}


@job
def import_supplier(supplier: str, pages: int) -> None:
    handle = current_job()
    assert handle is not None
    # Fan-out: one job per page, added to this job's own batch, which now
    # finishes only once they have finished too.
    Job.objects.enqueue_many(
        Job.objects.build(import_page, (supplier, page), batch=handle.batch_id)
        for page in range(pages)
    )


@job
def import_page(supplier: str, page: int) -> None:
    exported.append(f"{supplier} page {page}")


@job
def report_import(to: str, *, batch: dict[str, Any]) -> None:
    # batch: {"id", "description", "total", "succeeded", "failed"}
    done = f"{batch['succeeded']} of {batch['total']} done"
    exported.append(f"{to}: {batch['description']}, {done}")
