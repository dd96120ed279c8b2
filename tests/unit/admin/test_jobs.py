"""The job admin (``admin/jobs.py``, with ``admin/filters.py`` and ``admin/display.py``):
the changelist, its filters and counts, a job's page and its buttons."""

from __future__ import annotations

import datetime
import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from django.utils.html import strip_tags

from django_sqlqueue.admin import display, filters
from django_sqlqueue.db.engines.base import Engine
from django_sqlqueue.db.lifecycle import DEPENDENCY_FAILED
from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import CHANGELIST, make_job, staff_client
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db

EVIL = "<script>alert(1)</script>"


def listed(client: Client, query: str = "") -> list[int]:
    """The ids of the jobs the changelist shows, in its order."""
    response = client.get(CHANGELIST + query)
    assert response.status_code == 200
    return [job.pk for job in response.context["cl"].result_list]


# The changelist


def test_the_changelist_shows_the_triage_columns(admin_client: Client) -> None:
    job = make_job(JobStatus.FAILED, errors=2, worker="host:1:0")
    page = admin_client.get(CHANGELIST).content.decode()
    assert f'<a href="/admin/django_sqlqueue/job/{job.pk}/change/">{job.pk}</a>' in page
    assert 'style="background:#c62828;color:#fff;padding:1px 6px;border-radius:3px">Failed</span>' in page
    cells = {cell: strip_tags(html) for cell, html in re.findall(r'<td class="field-(\w+)">(.*?)</td>', page, re.S)}
    assert cells == {
        "task_and_queue": "tests.testapp.tasks.noopdefault",
        "status_and_attempts": "Failed 2/3",
        "moment": "ended -",
        "last_error": "RuntimeError: boom 2",
    }
    assert 'title="attempts started, of 3">2/3</span>' in page


def test_the_attempts_show_the_snoozes_when_there_were_any(admin_client: Client) -> None:
    job = make_job(JobStatus.READY, errors=1, snoozes=4)
    assert 'title="attempts started, of 3">1/3, snoozed 4</span>' in admin_client.get(CHANGELIST).content.decode()
    page = admin_client.get(f"/admin/django_sqlqueue/job/{job.pk}/change/").content.decode()
    assert "1/3, snoozed 4" in page


def test_the_changelist_shows_the_time_that_matters_in_each_status(admin_client: Client) -> None:
    now = timezone.now()
    make_job(JobStatus.READY, run_at=now + datetime.timedelta(hours=2, seconds=5))
    make_job(JobStatus.RUNNING, started_at=now - datetime.timedelta(minutes=3, seconds=5))
    make_job(JobStatus.FAILED, finished_at=now - datetime.timedelta(days=2))
    page = admin_client.get(CHANGELIST).content.decode()
    moments = [strip_tags(html) for html in re.findall(r'<td class="field-moment">(.*?)</td>', page)]
    assert moments == ["ended 2 d ago", "started 3 min ago", "due in 2 h"]


def test_long_names_and_errors_are_cut_with_the_whole_on_hover(admin_client: Client) -> None:
    task, queue = "a.very." * 20 + "long_task", "q" * 100
    make_job(JobStatus.FAILED, errors=1, task=task, queue=queue)
    page = admin_client.get(CHANGELIST).content.decode()
    assert f'title="{task}"' in page
    assert f'title="{queue}"' in page
    assert task not in strip_tags(page)
    assert queue not in strip_tags(page)


def test_progress_shows_as_a_bar_with_its_message(admin_client: Client) -> None:
    job = make_job(JobStatus.RUNNING, worker="w", progress={"done": 3, "total": 10, "message": "<b>three</b> of ten"})
    unbounded = make_job(JobStatus.RUNNING, worker="w", progress={"done": 7, "total": None, "message": ""})
    bar = '<progress class="sqlqueue-progress" value="3" max="10"></progress> 30% &lt;b&gt;three&lt;/b&gt; of ten'
    assert "sqlqueue-progress" not in admin_client.get(CHANGELIST).content.decode()  # on a job's page only
    assert bar in admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    page = admin_client.get(f"{CHANGELIST}{unbounded.pk}/change/").content.decode()
    assert '<span class="sqlqueue-progress">7 done</span>' in page
    assert "sqlqueue-progress" not in admin_client.get(f"{CHANGELIST}{make_job().pk}/change/").content.decode()


def test_a_running_job_s_page_offers_cancel(admin_client: Client) -> None:
    running = make_job(JobStatus.RUNNING, worker="w")
    page = admin_client.get(f"{CHANGELIST}{running.pk}/change/").content.decode()
    assert re.findall(r'name="change" value="(\w+)"', page) == ["cancel"]
    admin_client.post(f"{CHANGELIST}{running.pk}/change/cancel/")
    running.refresh_from_db()
    assert (running.status, running.cancel_requested_at is not None) == (JobStatus.RUNNING, True)


def test_newest_first(admin_client: Client) -> None:
    jobs = [make_job() for _ in range(3)]
    assert listed(admin_client) == [job.pk for job in reversed(jobs)]


def test_within_a_date_range_newest_first_by_that_time_unless_sorted(admin_client: Client) -> None:
    jobs = [make_job() for _ in range(3)]
    finished = make_job(JobStatus.SUCCESSFUL, finished_at=timezone.now())
    Job.objects.filter(pk=jobs[0].pk).update(enqueued_at=timezone.now() + datetime.timedelta(seconds=1))
    today = timezone.now().date()
    enqueued = f"?enqueued_at__range__gte={today}&enqueued_at__range__lte={today}"
    with CaptureQueriesContext(connection) as queries:
        assert listed(admin_client, enqueued) == [jobs[0].pk, finished.pk, jobs[2].pk, jobs[1].pk]
    assert any(re.search(r"ORDER BY \S*enqueued_at\S* DESC", query["sql"]) for query in queries)
    assert listed(admin_client, f"?finished_at__range__gte={today}&finished_at__range__lte={today}") == [finished.pk]
    assert listed(admin_client, enqueued + "&o=1") == [*(job.pk for job in jobs), finished.pk]  # a sort chosen


def test_no_page_counts_the_whole_table(admin_client: Client) -> None:
    make_job()
    with CaptureQueriesContext(connection) as queries:
        admin_client.get(CHANGELIST)
        admin_client.get(CHANGELIST + "?status__exact=READY")
    counts = [query["sql"] for query in queries if "COUNT(" in query["sql"].upper()]
    assert counts
    assert all("LIMIT" in sql.upper() for sql in counts), counts
    # The key alone, which an index holds: the list's run_at (shown_run_at) would read each row.
    assert not any("run_at" in sql for sql in counts), counts


def test_a_filtered_count_stops_at_the_cap(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filters, "COUNT_CAP", 3)
    for _ in range(5):
        make_job(JobStatus.FAILED)
    page = admin_client.get(CHANGELIST + "?status__exact=FAILED").content.decode()
    assert re.search(r"more than 3 jobs\s*</nav>", page)


def test_the_unfiltered_count_is_the_databases_estimate(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filters, "COUNT_CAP", 3)
    monkeypatch.setattr(Engine, "estimated_rows", lambda self, table: 1234)
    make_job()
    assert re.search(r"about 1234 jobs\s*</nav>", admin_client.get(CHANGELIST).content.decode())


# Filters and search


def test_filter_by_status_queue_and_task(admin_client: Client) -> None:
    failed = make_job(JobStatus.FAILED)
    mail = make_job(queue="mail")
    report = make_job(task="tests.testapp.tasks.report")
    assert listed(admin_client, "?status__exact=FAILED") == [failed.pk]
    assert listed(admin_client, "?queue=mail") == [mail.pk]
    assert listed(admin_client, "?task=tests.testapp.tasks.report") == [report.pk]


def test_the_waiting_filter_reads_the_waiting_index(admin_client: Client) -> None:
    parent = make_job()
    waiting = Job.objects.enqueue(noop, after=[parent])
    with CaptureQueriesContext(connection) as queries:
        assert listed(admin_client, "?status__exact=WAITING") == [waiting.pk]
    # On MySQL/MariaDB the index is on a hidden column, which only InStatus names.
    hidden = "waiting_queue" if connection.vendor == "mysql" else "WAITING"
    assert any(hidden in query["sql"] for query in queries)
    assert listed(admin_client, "?status__exact=WAITING&status__isnull=False") == [waiting.pk]
    assert admin_client.get(CHANGELIST + "?status__exact=NOPE").status_code == 200  # Django's own handling


def test_queue_and_task_choices_come_from_the_code_not_the_table(admin_client: Client, settings: Any) -> None:
    make_job(queue="stale")
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(CHANGELIST)
    assert not [query for query in queries if "DISTINCT" in query["sql"].upper()]
    assert {"default", "reports"} <= set(choices(response, "queue"))
    assert "stale" not in choices(response, "queue")
    assert {"tests.testapp.tasks.noop", "tests.testapp.tasks.report"} <= set(choices(response, "task"))
    settings.SQLQUEUE_QUEUES = ["default", "mail"]
    assert choices(admin_client.get(CHANGELIST + "?queue=stale"), "queue") == ["All", "default", "mail", "stale"]


def test_filter_by_tag_through_the_tags_index(admin_client: Client) -> None:
    from tests.testapp.tasks import import_rows, record

    tenant = Job.objects.enqueue(record, ["a"], tags=["tenant:42"])
    imported = Job.objects.enqueue(import_rows, ["s3"])
    Job.objects.enqueue(record, ["b"])
    with CaptureQueriesContext(connection) as queries:
        response = admin_client.get(CHANGELIST + "?tag=tenant:42")
    assert [job.pk for job in response.context["cl"].result_list] == [tenant.pk]
    assert not [query for query in queries if "DISTINCT" in query["sql"].upper()]
    # The tasks' declared tags are offered; any other filters from the query string.
    assert {"import", "nightly", "tenant:42"} <= set(choices(response, "tag"))
    assert listed(admin_client, "?tag=nightly") == [imported.pk]


def test_the_page_shows_expiry_tags_and_meta(admin_client: Client) -> None:
    from django_sqlqueue.db import expiry
    from tests.testapp.tasks import record

    job = Job.objects.enqueue(record, ["x"], tags=["tenant:42"], meta={"note": EVIL}, expires_in=60)
    Job.objects.filter(pk=job.pk).update(expires_at=timezone.now() - datetime.timedelta(minutes=1))
    expiry.expire(Job.objects.all())
    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    assert ">Cancelled: expired</span>" in page
    assert "Expires at (never started from then on)" in page
    assert '<a href="/admin/django_sqlqueue/job/?tag=tenant%3A42">tenant:42</a>' in page
    assert "&quot;note&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;" in page
    assert ">Cancelled: expired</span>" in admin_client.get(CHANGELIST).content.decode()


def choices(response: Any, title: str) -> list[str]:
    changelist = response.context["cl"]
    spec = next(spec for spec in changelist.filter_specs if spec.title == title)
    return [str(choice["display"]) for choice in spec.choices(changelist)]


@pytest.mark.parametrize("column", ["enqueued_at", "finished_at", "run_at"])
def test_date_ranges(admin_client: Client, column: str) -> None:
    day = datetime.datetime(2026, 3, 10, 12, tzinfo=datetime.timezone.utc)
    inside, *_ = [
        make_job(JobStatus.SUCCESSFUL, **dict[str, Any]({column: when}))
        for when in (day, day - datetime.timedelta(days=2), day + datetime.timedelta(days=2))
    ]
    query = f"?{column}__range__gte=2026-03-09&{column}__range__lte=2026-03-10"
    assert listed(admin_client, query) == [inside.pk]


def test_search_by_id_task_and_error_text(admin_client: Client) -> None:
    first = make_job(JobStatus.FAILED, errors=1)
    second = make_job(task="tests.testapp.tasks.report")
    Job.objects.filter(pk=second.pk).update(errors=[{"message": "connection refused by mail.example.com"}])
    assert listed(admin_client, f"?q={first.pk}") == [first.pk]
    assert listed(admin_client, f"?q=%23{second.pk}") == [second.pk]
    assert listed(admin_client, "?q=report") == [second.pk]
    assert listed(admin_client, "?q=REFUSED+BY") == [second.pk]
    assert listed(admin_client, "?q=boom") == [first.pk]


@pytest.mark.parametrize(
    "term",
    ["²", "٣", "%23¹²", "9223372036854775808", "99999999999999999999999999", "-1", "\uff11\uff12"],
    ids=["superscript", "arabic-indic", "hash-superscripts", "bigint+1", "huge", "negative", "fullwidth"],
)
def test_any_search_text_lists_without_error(admin_client: Client, term: str) -> None:
    """Digits that int() refuses, and ids past the column's range, find nothing; nothing fails."""
    make_job(JobStatus.FAILED, errors=1)
    assert listed(admin_client, f"?q={term}") == []
    assert admin_client.get(f"{CHANGELIST}retry-failed/?q={term}").status_code == 200


def test_the_largest_possible_id_is_searched_as_an_id(admin_client: Client) -> None:
    make_job()
    assert listed(admin_client, "?q=9223372036854775807") == []


# The job's page


def test_the_page_escapes_what_the_job_carries(admin_client: Client) -> None:
    job = make_job(JobStatus.FAILED, errors=1, args=[EVIL], result={"html": EVIL})
    Job.objects.filter(pk=job.pk).update(
        errors=[{"attempt": 1, "exception_class_path": "x.Error", "message": EVIL, "traceback": f"Trace\n{EVIL}\n"}]
    )
    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    assert EVIL not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<pre>Trace\n&lt;script&gt;alert(1)&lt;/script&gt;\n</pre>" in page
    changelist = admin_client.get(CHANGELIST).content.decode()
    assert EVIL not in changelist


@pytest.mark.skipif(
    connection.vendor != "sqlite", reason="only SQLite's JSON columns hold a lone surrogate (written by an old version)"
)
@pytest.mark.parametrize(
    ("column", "stored"),
    [
        ("args", '["\\ud800"]'),
        ("kwargs", '{"\\ud800": 1}'),
        ("result", '"\\ud800"'),
        ("errors", '[{"attempt": 1, "exception_class_path": "x.Error", "message": "\\ud800", "traceback": "\\ud800"}]'),
    ],
)
def test_a_surrogate_the_table_holds_is_shown_escaped(admin_client: Client, column: str, stored: str) -> None:
    """A row written before surrogates were refused: UTF-8 cannot carry the character, so
    the changelist (which shows the last error) and the job's page show its escape."""
    job = make_job()
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(Job._meta.db_table)
        cursor.execute(f"UPDATE {table} SET {connection.ops.quote_name(column)} = %s WHERE id = %s", [stored, job.pk])
    assert "\\ud800" in pages_of(admin_client, job)[1]


def pages_of(client: Client, job: Job) -> list[str]:
    """The changelist and the job's page, which must render."""
    responses = [client.get(CHANGELIST), client.get(f"{CHANGELIST}{job.pk}/change/")]
    assert [response.status_code for response in responses] == [200, 200]
    return [response.content.decode() for response in responses]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="only PostgreSQL holds a time past the year 9999")
def test_a_run_at_past_the_year_9999_the_table_holds_is_shown_capped(admin_client: Client) -> None:
    """A row an old version wrote (a run_at with an offset, a long delay): the driver
    cannot read it, so the admin reads it capped at the last time Python holds."""
    job = make_job()
    with connection.cursor() as cursor:
        table = connection.ops.quote_name(Job._meta.db_table)
        cursor.execute(f"UPDATE {table} SET run_at = '10000-01-01 04:59:59+00' WHERE id = %s", [job.pk])
    for page in pages_of(admin_client, job):
        assert 'title="9999-12-31 23:59:59 UTC (UTC)"' in page


def test_the_last_run_at_is_shown_in_a_time_zone_ahead_of_utc(admin_client: Client, settings: Any) -> None:
    """9999-12-31 23:59 UTC is past the year 9999 in Paris: shown in UTC instead."""
    settings.TIME_ZONE = "Europe/Paris"
    job = make_job(run_at=datetime.datetime.max.replace(tzinfo=datetime.timezone.utc))
    for page in pages_of(admin_client, job):
        assert 'title="9999-12-31 23:59:59 UTC (UTC)"' in page


def test_the_page_shows_arguments_errors_and_timings(admin_client: Client) -> None:
    started = timezone.now()
    job = make_job(
        JobStatus.FAILED,
        errors=2,
        args=[1, {"b": 2}],
        started_at=started,
        finished_at=started + datetime.timedelta(seconds=1.5),
        worker="w1",
    )
    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    assert "<pre>[\n  1,\n  {\n    &quot;b&quot;: 2\n  }\n]</pre>" in page
    assert page.index("<strong>Attempt 2</strong>") < page.index("<strong>Attempt 1</strong>")
    assert "<pre>Traceback (most recent call last):\nRuntimeError: boom 1\n</pre>" in page
    assert '<div class="readonly">1.500 s</div>' in page
    assert "_save" not in page  # read-only: no form to save


def test_the_page_offers_only_the_actions_that_apply(admin_client: Client, django_user_model: Any) -> None:
    failed = make_job(JobStatus.FAILED)
    scheduled = make_job(run_at=timezone.now() + datetime.timedelta(hours=1))

    def buttons(client: Client, job: Job) -> list[str]:
        return re.findall(r'name="change" value="(\w+)"', client.get(f"{CHANGELIST}{job.pk}/change/").content.decode())

    assert buttons(admin_client, failed) == ["retry"]
    assert buttons(admin_client, scheduled) == ["cancel", "run_now"]
    assert buttons(staff_client(django_user_model, "view_job", "cancel_job"), scheduled) == ["cancel"]
    # A failed job whose end cancelled what waited on it offers to retry that too.
    make_job(JobStatus.CANCELLED, last_error_class=DEPENDENCY_FAILED).dependencies.create(parent=failed)
    assert buttons(admin_client, failed) == ["retry", "retry_with_dependents"]


def test_a_button_changes_the_job_and_comes_back(admin_client: Client) -> None:
    job = make_job(JobStatus.FAILED)
    response = admin_client.post(f"{CHANGELIST}{job.pk}/change/retry/")
    assert response["Location"] == f"{CHANGELIST}{job.pk}/change/"
    assert [str(m) for m in admin_client.get(response["Location"]).context["messages"]] == ["Retried 1 job."]
    assert Job.objects.get().status == JobStatus.READY


def test_nothing_changes_on_get(admin_client: Client) -> None:
    job = make_job(JobStatus.FAILED)
    assert admin_client.get(f"{CHANGELIST}{job.pk}/change/retry/").status_code == 405
    assert admin_client.get(f"{CHANGELIST}retry-failed/").status_code == 200
    assert Job.objects.get().status == JobStatus.FAILED


def test_a_button_needs_its_permission(django_user_model: Any) -> None:
    job = make_job(JobStatus.FAILED)
    client = staff_client(django_user_model, "view_job", "cancel_job")
    assert client.post(f"{CHANGELIST}{job.pk}/change/retry/").status_code == 403
    assert client.post(f"{CHANGELIST}{job.pk}/change/nonsense/").status_code == 403
    assert client.post(f"{CHANGELIST}abc/change/cancel/").status_code == 404
    assert Job.objects.get().status == JobStatus.FAILED


def test_a_running_job_cannot_be_deleted_from_its_page(admin_client: Client) -> None:
    job = make_job(JobStatus.RUNNING, worker="w1")
    assert admin_client.post(f"{CHANGELIST}{job.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Job.objects.exists()


def test_jobs_are_not_added_or_edited_by_hand(admin_client: Client) -> None:
    job = make_job()
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403
    assert admin_client.post(f"{CHANGELIST}{job.pk}/change/", {"priority": 5}).status_code == 403
    assert Job.objects.get().priority == 0


def test_staff_without_view_permission_see_nothing(django_user_model: Any) -> None:
    make_job()
    client = staff_client(django_user_model)
    assert client.get(CHANGELIST).status_code == 403
    assert client.get(f"{CHANGELIST}overview/").status_code == 403


# Retry every failed job a filter matches


def test_retry_every_failed_job_the_filter_matches(admin_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from django_sqlqueue.admin import changes

    monkeypatch.setattr(changes, "CHUNK_SIZE", 7)
    matching = [make_job(JobStatus.FAILED, queue="mail") for _ in range(60)]  # more than a page
    other_queue = make_job(JobStatus.FAILED)
    ready = make_job(queue="mail")
    url = f"{CHANGELIST}retry-failed/?queue=mail"
    page = admin_client.get(url)
    assert "60 failed jobs match" in page.content.decode()
    assert "<li><code>queue</code> = mail</li>" in page.content.decode()
    assert Job.objects.filter(status=JobStatus.FAILED).count() == 61
    response = admin_client.post(url)
    assert response["Location"] == f"{CHANGELIST}?queue=mail"
    assert [str(m) for m in admin_client.get(response["Location"]).context["messages"]] == ["Retried 60 jobs."]
    assert set(Job.objects.filter(pk__in=[job.pk for job in matching]).values_list("status", flat=True)) == {
        JobStatus.READY
    }
    assert Job.objects.get(pk=other_queue.pk).status == JobStatus.FAILED
    assert Job.objects.get(pk=ready.pk).status == JobStatus.READY


def test_retry_every_failed_job_needs_the_permission(django_user_model: Any) -> None:
    make_job(JobStatus.FAILED)
    client = staff_client(django_user_model, "view_job")
    assert "retry-failed" not in client.get(CHANGELIST).content.decode()
    assert client.get(f"{CHANGELIST}retry-failed/").status_code == 403
    assert client.post(f"{CHANGELIST}retry-failed/").status_code == 403
    assert Job.objects.get().status == JobStatus.FAILED


def test_retry_every_failed_job_with_a_bad_filter(admin_client: Client) -> None:
    make_job(JobStatus.FAILED)
    response = admin_client.post(f"{CHANGELIST}retry-failed/?nonsense__field=1")
    assert response["Location"] == f"{CHANGELIST}?nonsense__field=1&e=1"
    assert Job.objects.get().status == JobStatus.FAILED


def test_a_clipped_value_is_escaped_and_breaks_after_dots_slashes_and_underscores() -> None:
    assert display.clipped("<b>a.b_c/d</b>", 40) == (
        '<span class="sqlqueue-long">&lt;b&gt;a.<wbr>b_<wbr>c/<wbr>d&lt;/<wbr>b&gt;</span>'
    )
    cut = display.clipped("app.tasks." + "x" * 100 + ".send_mail", 20)
    assert (
        cut
        == '<span class="sqlqueue-long" title="app.tasks.'
        + "x" * 100
        + '.send_mail">app.<wbr>task…x.<wbr>send_<wbr>mail</span>'
    )


def test_an_attempts_start_shows_as_every_time_or_as_written(settings: Any) -> None:
    settings.TIME_ZONE = "UTC"
    recorded = {"attempt": 1, "started_at": "2026-03-10T12:00:00+00:00", "traceback": "T"}
    page = display.errors_html([recorded, {**recorded, "attempt": 2, "started_at": "<b>soon</b>"}])
    assert "started &lt;b&gt;soon&lt;/b&gt;</span>" in page
    assert 'started <time class="sqlqueue-time" datetime="2026-03-10T12:00:00+00:00"' in page
    assert '<span class="quiet">2026-03-10 12:00:00 UTC (UTC)</span></span></p><pre>T</pre>' in page
    folded = display.errors_html([recorded], folded=True)
    assert "<details><summary>Traceback</summary><pre>T</pre></details>" in folded
    assert "2026-03-10 12:00:00 UTC (UTC)</span>" not in folded  # on hover only
