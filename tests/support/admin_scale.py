"""Times the admin's overview, its charts, the failures page and ``sqlqueue_stats``'
read with 1,000,000 jobs, or ``--jobs N`` (not a test).

Fills the database named by the test settings (``DB_BACKEND``, ``DB_NAME``; SQLite:
``DB_NAME`` is the file) with a week of finished jobs, then prints how long each read
takes, the best of a few runs::

    DB_BACKEND=postgres DB_NAME=scratch python -m tests.support.admin_scale [--jobs N] [--keep]

It deletes every job of that database first: never point it at one you care about.
``--keep`` reuses the jobs of an earlier run when there are as many."""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.db.models import Count, Max, Q  # noqa: E402
from django.db.models.functions import TruncHour  # noqa: E402

from django_sqlqueue.admin import failures  # noqa: E402
from django_sqlqueue.admin.overview import queue_stats  # noqa: E402
from django_sqlqueue.admin.throughput import LAST_HOUR, LAST_WEEK, throughput  # noqa: E402
from django_sqlqueue.db import rollup  # noqa: E402
from django_sqlqueue.db.clock import DatabaseNow  # noqa: E402
from django_sqlqueue.models import FinishedHour, Job, JobStatus  # noqa: E402
from django_sqlqueue.reporting.counting import queue_counts, status_counts  # noqa: E402
from django_sqlqueue.reporting.stats import snapshot  # noqa: E402

QUEUES = ["default", "mail", "reports", "images"]
TASKS = [f"shop.tasks.task_{n}" for n in range(20)]
ERRORS = ["builtins.ValueError", "builtins.KeyError", "requests.Timeout", "shop.errors.Declined", "OSError"]
#: Of every 1,000 jobs: 880 succeeded, 60 failed for good, 50 retrying (READY, an attempt
#: failed), 10 cancelled.


#: One SELECT of ``total`` rows per database, from a series ``n``: its status by ``n % 1000``
#: (``MIX``), its queue, task and error class spread over ``QUEUES``, ``TASKS``, ``ERRORS``,
#: and finished in the order of its id over the last 7 days, as jobs finish about in the
#: order they were enqueued (rows in random order make each hour's range scan read all over
#: the table: counting the week took 5.4 s rather than 1.6 s on PostgreSQL).
SERIES = {
    "postgresql": (
        "SELECT n, n % 1000 AS m, NOW() - (({last} - n) * 604800 / {total}) * INTERVAL '1 second' AS t "
        "FROM generate_series(0::bigint, {last}) AS n"
    ),
    "mysql": "SELECT seq AS n, seq % 1000 AS m, "
    "UTC_TIMESTAMP(6) - INTERVAL (({last} - seq) * 604800 DIV {total}) SECOND AS t "
    "FROM seq_0_to_{last}",
    "sqlite": (
        "SELECT n, n % 1000 AS m, "
        "STRFTIME('%Y-%m-%d %H:%M:%f', 'now', '-' || (({last} - n) * 604800 / {total}) || ' seconds') AS t "
        "FROM (WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < {last}) SELECT n FROM s)"
    ),
}


def fill(total: int) -> None:
    """``total`` jobs finished (or failed an attempt) over the last 7 days, in one statement."""
    Job.objects.all().delete()
    FinishedHour.objects.all().delete()
    mysql = connection.vendor == "mysql"
    concat = "CONCAT({}, {})" if mysql else "({} || {})"
    div = "DIV" if mysql else "/"
    as_json = "CAST({} AS jsonb)" if connection.vendor == "postgresql" else "{}"

    def pick(names: list[str], key: str) -> str:
        return (
            "CASE "
            + " ".join(f"WHEN ({key}) % {len(names)} = {i} THEN '{name}'" for i, name in enumerate(names))
            + " END"
        )

    status = (
        "CASE WHEN m < 880 THEN 'SUCCESSFUL' WHEN m < 940 THEN 'FAILED' WHEN m < 990 THEN 'READY' ELSE 'CANCELLED' END"
    )
    failed = "(m >= 880 AND m < 990)"
    error = pick(ERRORS, "n * 17")
    errors = concat.format(
        '\'[{"attempt": 1, "message": "boom", "exception_class_path": "\'', concat.format(error, "'\"}]'")
    )
    errors_or_none = f"CASE WHEN {failed} THEN {errors} ELSE '[]' END"
    sql = (
        "INSERT INTO django_sqlqueue_job (queue, task, args, kwargs, priority, status, run_at, attempts, "
        "max_attempts, enqueued_at, started_at, finished_at, worker, errors, last_error_class) "
        f"SELECT {pick(QUEUES, f'n * 7 + n {div} 7')}, {pick(TASKS, 'n * 13')}, '[]', '{{}}', 0, {status}, t, "
        f"CASE WHEN {failed} THEN 2 ELSE 1 END, 3, t, t, CASE WHEN m >= 940 AND m < 990 THEN NULL ELSE t END, '', "
        f"{as_json.format(errors_or_none)}, CASE WHEN {failed} THEN {error} ELSE '' END "
        f"FROM ({SERIES[connection.vendor].format(last=total - 1, total=total)}) AS series"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE django_sqlqueue_job")
        elif connection.vendor == "mysql":
            cursor.execute("ANALYZE TABLE django_sqlqueue_job")
            cursor.fetchall()
        else:
            cursor.execute("ANALYZE")


def week_before() -> list[Any]:
    """The 7-day chart's query before the counted hours: every finished job of the week."""
    return list(
        Job.objects.filter(
            finished_at__gte=DatabaseNow() - datetime.timedelta(days=7),
            status__in=[JobStatus.SUCCESSFUL, JobStatus.FAILED],
        )
        .values_list("queue")
        .annotate(
            bucket=TruncHour("finished_at", tzinfo=datetime.timezone.utc),
            now=Max(DatabaseNow()),
            succeeded=Count("pk", filter=Q(status=JobStatus.SUCCESSFUL)),
            failed=Count("pk", filter=Q(status=JobStatus.FAILED)),
        )
        .order_by()
    )


def timed(label: str, work: Callable[[], Any], runs: int = 5, before: Callable[[], Any] | None = None) -> None:
    seconds = []
    for _ in range(runs):
        if before is not None:
            before()
        began = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - began)
    print(f"  {label:<58} best {min(seconds) * 1000:8.1f} ms   median {statistics.median(seconds) * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument(
        "--changelist",
        action="store_true",
        help="time only the admin's pages as a superuser gets them (the changelist's filters and sorts, a job)",
    )
    parser.add_argument(
        "--pages-only",
        action="store_true",
        help="time only what a look reads (counts, sqlqueue_stats, overview, failures), the hours counted first",
    )
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    if not (options.keep and Job.objects.count() == options.jobs):
        began = time.perf_counter()
        fill(options.jobs)
        print(f"filled {options.jobs} jobs in {time.perf_counter() - began:.0f} s")
    finished = Job.objects.filter(status__in=rollup.CHARTED).count()
    print(f"{connection.vendor} {connection.settings_dict['NAME']}: {Job.objects.count()} jobs, {finished} finished")
    jobs = Job.objects.get_queryset()
    if options.changelist:
        time_admin_pages()
        return
    if options.pages_only:
        rollup.catch_up("default")
        time_pages(jobs)
        return
    forget_all = FinishedHour.objects.all().delete
    timed("7-day chart before (one query over the week)", week_before)
    timed("7-day chart, no hour counted yet (counts 167 hours)", lambda: throughput(jobs, LAST_WEEK), 3, forget_all)
    timed(
        "counting the week's hours (rollup.catch_up, as the leader)", lambda: rollup.catch_up("default"), 3, forget_all
    )
    timed(
        "counting one hour (rollup.catch_up)",
        lambda: rollup.catch_up("default"),
        3,
        lambda: FinishedHour.objects.filter(hour=rollup.hours("default").closed - rollup.HOUR).delete(),
    )
    rollup.catch_up("default")
    timed("7-day chart, hours counted", lambda: throughput(jobs, LAST_WEEK))
    timed("last-hour chart", lambda: throughput(jobs, LAST_HOUR))
    time_pages(jobs)


def time_pages(jobs: Any) -> None:
    """What a look at the queue reads, the hours of the 7-day chart counted."""
    timed("counts by status, exact: counting.status_counts()", lambda: status_counts(jobs), 3)
    timed("counts by status as shown: counting.queue_counts()", lambda: queue_counts(jobs))
    timed("sqlqueue_stats' read: stats.snapshot()", lambda: snapshot("default"))
    timed("overview: queue_stats() (counts, lags, both charts)", queue_stats)
    timed("failures page: failures.groups()", failures.groups)


def time_admin_pages() -> None:
    """The admin's pages through Django's test client, as a superuser: the changelist
    with each of its filters and sorts, a job's page, the overview and the failures."""
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings

    user_model = get_user_model()
    user = user_model.objects.filter(username="scale").first() or user_model.objects.create_superuser(
        "scale", "scale@example.com", "-"
    )
    today = datetime.datetime.now(datetime.timezone.utc).date()
    week_ago, three_days_ago = today - datetime.timedelta(days=6), today - datetime.timedelta(days=3)
    newest = Job.objects.order_by("-id").values_list("id", flat=True).first()
    changelist = "/admin/django_sqlqueue/job/"
    pages = {
        "changelist": "",
        "status FAILED": "?status__exact=FAILED",
        "status READY": "?status__exact=READY",
        "status WAITING (none)": "?status__exact=WAITING",
        "queue mail": "?queue=mail",
        "task task_7": "?task=shop.tasks.task_7",
        "enqueued: one day, 6 days ago": f"?enqueued_at__range__gte={week_ago}&enqueued_at__range__lte={week_ago}",
        "finished: one day, 3 days ago": (
            f"?finished_at__range__gte={three_days_ago}&finished_at__range__lte={three_days_ago}"
        ),
        "failed, finished 3 days ago": (
            f"?status__exact=FAILED&finished_at__range__gte={three_days_ago}&finished_at__range__lte={three_days_ago}"
        ),
        "queue mail, enqueued 6 days ago": (
            f"?queue=mail&enqueued_at__range__gte={week_ago}&enqueued_at__range__lte={week_ago}"
        ),
        "sorted by enqueued, newest first": "?o=-8",
        "sorted by finished, newest first": "?o=-9",
        "sorted by finished, oldest first": "?o=9",
        "a job": f"{newest}/change/",
        "overview": "overview/",
        "failures": "failures/",
    }
    with override_settings(ALLOWED_HOSTS=["*"], DEBUG=False):
        client = Client()
        client.force_login(user)
        for label, page in pages.items():

            def get(page: str = page) -> None:
                response = client.get(changelist + page)
                assert response.status_code == 200, (page, response.status_code)

            timed(label, get)


if __name__ == "__main__":
    main()
