"""The admin in a real browser: headless Chromium (Debian's ``chromium`` package, which
``.ci/run`` installs) driven by Playwright, against the live server and a real
``runworkers``. Screenshots land in ``artifacts/browser/``."""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from django_sqlqueue import pause_queue
from django_sqlqueue.models import Job, JobStatus, Schedule, Worker
from django_sqlqueue.rules.recurrence import DefinedIn
from tests.support.workers import ROOT, Workers
from tests.testapp.tasks import add

CHROMIUM = os.environ.get("SQLQUEUE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = ROOT / "artifacts" / "browser"
# The machine may have no network: without these Chromium waits on its update and sync services.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IN_RANGE = datetime.datetime(2026, 3, 10, 12, tzinfo=datetime.timezone.utc)

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def browser_page(viewport: ViewportSize | None = None) -> Iterator[Any]:
    """A Chromium page (1400 by 900 px unless told); a missing browser fails the test
    (CI installs it), never skips it."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install chromium (or set SQLQUEUE_CHROMIUM).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport=viewport or {"width": 1400, "height": 900})
        finally:
            browser.close()


def log_in(page: Any, url: str) -> None:
    """Sign in as the superuser the test made, landing on the jobs' changelist."""
    page.goto(f"{url}/admin/login/?next=/admin/django_sqlqueue/job/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "password")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/django_sqlqueue/job/")


def failed_job(finished_at: datetime.datetime) -> Job:
    job = Job.objects.enqueue(add, (2, 3))
    error = {"attempt": 3, "message": "<b>flaky</b>", "exception_class_path": "builtins.RuntimeError"}
    Job.objects.filter(pk=job.pk).update(status=JobStatus.FAILED, attempts=3, finished_at=finished_at, errors=[error])
    return job


def test_triage_a_failed_job_in_the_browser(
    live_server: Any, start_workers: Callable[..., Workers], monkeypatch: pytest.MonkeyPatch
) -> None:
    get_user_model().objects.create_superuser("admin", "admin@example.com", "password")
    wanted = failed_job(IN_RANGE)
    too_old = failed_job(IN_RANGE - datetime.timedelta(days=30))
    Job.objects.enqueue(add, (1, 1), delay=3600)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # The ORM is used again after the browser's event loop has run in this thread.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with browser_page() as page:
        log_in(page, live_server.url)
        page.click("#changelist-filter a:text-is('Failed')")
        page.fill("input[name=finished_at__range__gte]", "2026-03-09")
        page.fill("input[name=finished_at__range__lte]", "2026-03-11")
        page.click("details[data-filter-title='finished'] input[type=submit]")
        page.wait_for_url("**finished_at__range__gte=2026-03-09**")
        rows = page.locator("#result_list tbody tr")
        assert rows.count() == 1
        assert rows.first.locator("th a").inner_text() == str(wanted.pk)
        assert "<b>flaky</b>" in rows.first.inner_text()  # shown as text, not markup
        rows.first.locator("input.action-select").check()
        page.select_option("select[name=action]", "retry")
        page.click("button[name=index]")
        assert page.locator("ul.messagelist li").inner_text() == "Retried 1 job."

        workers = start_workers("--burst", "--processes", "1")
        assert workers.wait(120) == 0, workers.text()

        page.goto(f"{live_server.url}/admin/django_sqlqueue/job/{wanted.pk}/change/")
        assert page.locator(".field-status_badge .readonly").inner_text() == "Successful"
        assert page.locator(".field-result_pretty pre").inner_text() == "5"
        page.screenshot(path=ARTIFACTS / "job-successful.png", full_page=True)
        page.goto(f"{live_server.url}/admin/django_sqlqueue/job/")
        page.screenshot(path=ARTIFACTS / "changelist.png")

    assert Job.objects.get(pk=wanted.pk).status == JobStatus.SUCCESSFUL
    assert Job.objects.get(pk=too_old.pk).status == JobStatus.FAILED


# Every page the app adds to the admin, on a laptop's screen.

#: A laptop's viewport: the app's pages must fit it without sideways scrolling.
LAPTOP: ViewportSize = {"width": 1280, "height": 800}
#: Names as long as real projects' (dotted task paths, queues named after their routes).
LONG_TASK = "acme.integrations.partners.webhooks.tasks.deliver_signed_webhook_with_exponential_backoff"
QUEUES = ["default", "notifications.email.transactional.eu-west-1", "reports-nightly-aggregation", "webhooks.outbound"]
LONG_ERROR = (
    "HTTPSConnectionPool(host='partner-api.integrations.example.com', port=443): Max retries exceeded with url: "
    "/v2/webhooks/deliveries/7f3c9a0e4b1d4c2fa9e8d7c6b5a4f3e2?signature=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c"
    "d15d6c15b0f00a08 (Caused by NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f3a2b1c4d50>: "
    "Failed to establish a new connection: [Errno 111] Connection refused'))"
)
WORKER = "web-prod-eu-west-1a-ip-10-0-12-34.eu-west-1.compute.internal:48213:0"
#: A task of several parameters, some with defaults, for the Enqueue page.
ENQUEUED_TASK = "tests.testapp.tasks.per_tenant"


def realistic_data() -> dict[str, Job]:
    """Jobs of every status on several queues with long names, failures of several
    groups with long errors, a paused queue, workers and schedules; the jobs whose
    pages the test opens, by name."""
    now = timezone.now()
    error = {
        "attempt": 3,
        "worker": WORKER,
        "started_at": (now - datetime.timedelta(minutes=4)).isoformat(),
        "exception_class_path": "requests.exceptions.ConnectionError",
        "message": LONG_ERROR,
        "traceback": "Traceback (most recent call last):\n"
        f'  File "/srv/app/{LONG_TASK.replace(".", "/")}.py", line 42\n'
        f"requests.exceptions.ConnectionError: {LONG_ERROR}\n",
    }
    jobs = {}
    for number, queue in enumerate(QUEUES):
        for status in JobStatus.values:
            job = Job.objects.enqueue(add, (number, 1), queue=queue)
            finished = None if status in (JobStatus.READY, JobStatus.RUNNING) else now - datetime.timedelta(minutes=3)
            failed = status == JobStatus.FAILED or (status == JobStatus.READY and number % 2)
            Job.objects.filter(pk=job.pk).update(
                task=f"{LONG_TASK}_{number}" if number else LONG_TASK,
                status=status,
                attempts=3 if failed else 1,
                errors=[error] if failed else [],
                last_error_class=error["exception_class_path"] if failed else "",
                enqueued_at=now - datetime.timedelta(minutes=10),
                started_at=now - datetime.timedelta(minutes=4),
                finished_at=finished,
                worker=WORKER if status == JobStatus.RUNNING else "",
                progress={"done": 3, "total": 10, "message": "3 of 10 partners"}
                if status == JobStatus.RUNNING
                else None,
            )
            jobs[f"{status}-{number}"] = job
    Job.objects.enqueue(add, (9, 9), queue=QUEUES[1], delay=7200)
    pause_queue(QUEUES[2], "Partner API maintenance window until 06:00 UTC, see INC-4821 in the incident tracker")
    for index in range(3):
        Worker.objects.create(
            name=f"{WORKER[:-1]}{index}", host=WORKER.split(":")[0], pid=48213, queues=QUEUES[1:] if index else None
        )
    for key, expression, zone in [
        ("nightly-partner-reconciliation-report-for-every-region", "30 2 * * 1-5", "America/Argentina/Buenos_Aires"),
        ("refresh-exchange-rates", "every 300 s", "UTC"),
    ]:
        Schedule.objects.create(
            key=key,
            task=LONG_TASK,
            expression=expression,
            cron="" if expression.startswith("every") else expression,
            every=300 if expression.startswith("every") else None,
            tz=zone,
            missed="latest",
            queue=QUEUES[1],
            last_tick_at=now,
            next_tick_at=now + datetime.timedelta(hours=7),
            last_run_at=now - datetime.timedelta(hours=17),
            last_job_id=jobs["SUCCESSFUL-0"].pk,
        )
    # One defined in the admin, whose task a deploy removed: its long problem is shown.
    Schedule.objects.create(
        key="partner-webhook-redelivery-sweep-for-every-region-and-partner",
        defined_in=DefinedIn.ADMIN,
        task=LONG_TASK,
        cron="*/15 * * * *",
        expression="*/15 * * * *",
        tz="America/Argentina/Buenos_Aires",
        kwargs={"partners": ["acme-logistics-eu", "globex-payments-us"], "regions": QUEUES},
        queue=QUEUES[1],
        last_tick_at=now,
        next_tick_at=now + datetime.timedelta(minutes=7),
        last_run_at=now - datetime.timedelta(minutes=8),
        last_job_id=jobs["FAILED-1"].pk,
        recent_jobs=[jobs[f"{status}-1"].pk for status in JobStatus.values],
    )
    return jobs


#: Each page's path under /admin/django_sqlqueue/ (a callable of the jobs for a job's
#: page), and the selectors of the controls a person acts with there: each must be on
#: screen without scrolling sideways.
PAGES: dict[str, tuple[Any, list[str]]] = {
    "app-index": ("", []),
    "changelist": (
        "job/",
        ["select[name=action]", "button[name=index]", ".object-tools a", "#searchbar", "#enqueue-job"],
    ),
    "changelist-failed": ("job/?status__exact=FAILED", ["button[name=index]", "#retry-failed"]),
    "job-failed": (
        lambda jobs: f"job/{jobs['FAILED-1'].pk}/change/",
        [".object-tools button", ".deletelink", "#edit-job"],
    ),
    "job-edit": (
        lambda jobs: f"job/{jobs['FAILED-1'].pk}/edit/",
        [*(f"textarea[name={name}]" for name in ("args", "kwargs")), "input[name=run_at]", "input[name=_save]"],
    ),
    "enqueue-task": ("job/enqueue/", ["select[name=task]", "input[type=submit]"]),
    "enqueue": (
        f"job/enqueue/?task={ENQUEUED_TASK}",
        ["textarea[name=arg_tenant]", "textarea[name=arg_seconds]", "input[name=run_at]", "input[name=_save]"],
    ),
    "job-running": (lambda jobs: f"job/{jobs['RUNNING-1'].pk}/change/", [".object-tools button"]),
    "failures": ("job/failures/", ["input.retry-group", "input.cancel-group"]),
    "overview": ("job/overview/", ["input.pause-queue", "input.resume-queue", "input[name=reason]"]),
    "retry-failed": ("job/retry-failed/?queue=webhooks.outbound", ["input[type=submit]", ".cancel-link"]),
    "workers": ("worker/", ["#searchbar"]),
    "worker": (lambda jobs: f"worker/{Worker.objects.latest('pk').pk}/change/", []),
    "schedules": ("schedule/", ["select[name=action]", "button[name=index]"]),
    "schedule": (lambda jobs: f"schedule/{Schedule.objects.earliest('pk').pk}/change/", []),
    "schedule-add": ("schedule/add/", ["input[name=_save]", "select[name=task]"]),
    "schedule-defined-here": (
        lambda jobs: f"schedule/{Schedule.objects.get(defined_in=DefinedIn.ADMIN).pk}/change/",
        ["input[name=_save]", ".deletelink"],
    ),
}


#: The elements of a page that scroll sideways, as tag.class.
SCROLLED_SIDEWAYS = """[...document.querySelectorAll("*")]
    .filter(e => ["auto", "scroll"].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1)
    .map(e => `${e.tagName}.${e.className}`)"""


def test_every_page_fits_a_laptop_screen(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    get_user_model().objects.create_superuser("admin", "admin@example.com", "password")
    jobs = realistic_data()
    # Read before the browser starts: inside its event loop the ORM would open a connection
    # of its own, which outlives the test (and the test database's teardown then fails).
    paths = {name: (path(jobs) if callable(path) else path, controls) for name, (path, controls) in PAGES.items()}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    too_wide: dict[str, int] = {}
    scrolled: dict[str, list[str]] = {}
    off_screen: dict[str, list[str]] = {}
    wrapped_times: dict[str, int] = {}
    with browser_page(LAPTOP) as page:
        log_in(page, live_server.url)
        for name, (path, controls) in paths.items():
            page.goto(f"{live_server.url}/admin/django_sqlqueue/{path}")
            page.screenshot(path=ARTIFACTS / f"{name}-1280.png", full_page=True)
            width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            if width > inner:
                too_wide[name] = width
            # Nor may a part of it scroll sideways (Django's changelist puts its table in a box that would).
            if boxes_scrolled := page.evaluate(SCROLLED_SIDEWAYS):
                scrolled[name] = boxes_scrolled
            for selector in controls:
                boxes = [element.bounding_box() for element in page.query_selector_all(selector)]
                if not boxes or any(box is None or box["x"] < 0 or box["x"] + box["width"] > inner for box in boxes):
                    off_screen.setdefault(name, []).append(selector)
            # A time reads on one line: an inline element that wraps has more than one box.
            wrapped_times[name] = page.evaluate(
                "[...document.querySelectorAll('time')].filter(t => t.getClientRects().length > 1).length"
            )
        page.goto(f"{live_server.url}/admin/django_sqlqueue/job/")
        exact = page.eval_on_selector_all("#result_list time", "times => times.map(time => time.title)")
    assert too_wide == {}, f"pages wider than {LAPTOP['width']} px"
    assert scrolled == {}, "parts of pages that scroll sideways"
    assert off_screen == {}, "controls missing or off screen"
    assert {name: count for name, count in wrapped_times.items() if count} == {}, "times on more than one line"
    assert exact, "no time on the job list"
    assert all(title.endswith(" UTC (UTC)") for title in exact), "the exact time and its zone on hover"


# Enqueue a job and edit it, on a laptop's screen.


def test_enqueue_a_job_then_edit_it_in_the_browser(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    get_user_model().objects.create_superuser("admin", "admin@example.com", "password")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with browser_page(LAPTOP) as page:
        log_in(page, live_server.url)
        page.click("#enqueue-job")
        page.select_option("select[name=task]", "tests.testapp.tasks.add")
        page.click("#enqueue-task input[type=submit]")
        page.fill("textarea[name=arg_a]", "2")
        page.fill("textarea[name=arg_b]", "oops")
        page.click("input[name=_save]")
        assert "This is not JSON" in page.locator(".field-arg_b .errorlist").inner_text()
        assert fits(page)
        page.screenshot(path=ARTIFACTS / "enqueue-error-1280.png", full_page=True)
        page.fill("textarea[name=arg_b]", "3")
        page.click("input[name=_save]")
        page.wait_for_url("**/change/")
        assert page.locator("ul.messagelist li").inner_text().startswith("Enqueued job ")

        page.click("#edit-job")
        # The form enqueued the arguments by name: give them by position instead.
        page.fill("textarea[name=args]", "[20, 22]")
        page.fill("textarea[name=kwargs]", "{}")
        page.fill("input[name=priority]", "5")
        assert fits(page)
        page.screenshot(path=ARTIFACTS / "job-edit-1280.png", full_page=True)
        page.click("input[name=_save]")
        page.wait_for_url("**/change/")
        said = page.locator("ul.messagelist li").inner_text()
        assert said.endswith(': Edited: args [] → [20, 22]; kwargs {"a": 2, "b": 3} → {}; priority 0 → 5.')
    job = Job.objects.get()
    assert (job.args, job.priority, job.status) == ([20, 22], 5, JobStatus.READY)


# A workflow's graph, and pages that update themselves, on a laptop's screen.


def workflow_in_a_batch() -> tuple[int, Job, Job]:
    """A batch: a root, thirty jobs after it (a layer too wide to draw job by job) of
    several statuses, and a last job after them; the batch's id, a middle job and the root."""
    from django_sqlqueue import workflows

    with Job.objects.batch(description="nightly partner reconciliation") as batch:
        root = Job.objects.enqueue(add, (1, 1))
        middle, _last = workflows.chord(
            [Job.objects.build(add, (n, 1), after=[root]) for n in range(30)], Job.objects.build(add, (0, 0))
        )
    Job.objects.filter(pk=root.pk).update(status=JobStatus.SUCCESSFUL)
    Job.objects.filter(pk__in=[job.pk for job in middle[:10]]).update(status=JobStatus.FAILED)
    Job.objects.filter(pk__in=[job.pk for job in middle[10:14]]).update(status=JobStatus.RUNNING)
    return batch.pk, middle[12], root


def fits(page: Any) -> bool:
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    return bool(width <= inner)


def test_the_workflow_graph_and_pages_that_update_themselves(live_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from django.db import connections
    from django.test import override_settings

    get_user_model().objects.create_superuser("admin", "admin@example.com", "password")
    batch, running, root = workflow_in_a_batch()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    admin = f"{live_server.url}/admin/django_sqlqueue"
    with override_settings(SQLQUEUE_ADMIN_REFRESH=1), browser_page(LAPTOP) as page:
        try:
            log_in(page, live_server.url)

            page.goto(f"{admin}/jobbatch/{batch}/change/")
            graph = page.locator(".sqlqueue-graph svg")
            assert graph.is_visible()
            assert fits(page)
            # The root, the last job, and a group per status of the wide layer.
            assert graph.locator("a").count() == 2 + 3
            assert all(f"{count} \N{MULTIPLICATION SIGN} " in graph.text_content() for count in (10, 4, 16))
            page.screenshot(path=ARTIFACTS / "batch-graph-1280.png", full_page=True)

            page.goto(f"{admin}/job/{running.pk}/change/")
            assert page.locator(".sqlqueue-graph .sqlqueue-graph-focus").count() == 1
            assert fits(page)
            note = page.locator("#sqlqueue-refresh")
            assert note.inner_text() == "Figures update every 1 s while this tab is visible."
            page.screenshot(path=ARTIFACTS / "job-graph-1280.png", full_page=True)
            page.locator(".sqlqueue-graph").screenshot(path=ARTIFACTS / "job-graph-alone-1280.png")
            Job.objects.filter(pk=running.pk).update(status=JobStatus.SUCCESSFUL, progress=None)
            page.wait_for_function(
                "document.querySelector('.field-status_badge .readonly').innerText === 'Successful'", polling=250
            )
            page.wait_for_function(
                "document.getElementById('sqlqueue-refresh').innerText.includes('no longer running')", polling=250
            )
            page.screenshot(path=ARTIFACTS / "job-refreshed-1280.png", full_page=True)

            page.goto(f"{admin}/job/overview/")
            cell = page.locator("tr.queue[data-queue=default] td.count-failed a")
            assert cell.inner_text() == "10"
            Job.objects.filter(pk=root.pk).update(status=JobStatus.FAILED)
            page.wait_for_function(
                "document.querySelector('tr.queue[data-queue=default] td.count-failed a').innerText === '11'",
                polling=250,
            )
            assert fits(page)
            assert note.is_visible()
            page.screenshot(path=ARTIFACTS / "overview-refreshed-1280.png", full_page=True)

            page.goto(f"{admin}/job/")
            row = page.locator(f"#result_list tbody tr:has(th a:text-is('{root.pk}'))")
            row.locator("input.action-select").check()
            Job.objects.filter(pk=root.pk).update(status=JobStatus.CANCELLED)
            page.wait_for_function(
                f"[...document.querySelectorAll('#result_list th a')].find(a => a.innerText === '{root.pk}')"
                ".closest('tr').querySelector('.field-status_and_attempts').innerText.startsWith('Cancelled')",
                polling=250,
            )
            assert row.locator("input.action-select").is_checked(), "a selected row stays selected"
            page.goto(f"{admin}/job/?status__exact=CANCELLED")
            Job.objects.filter(pk=root.pk).update(status=JobStatus.FAILED)
            page.wait_for_function("document.querySelector('#result_list tbody tr.sqlqueue-gone')", polling=250)
            assert row.get_attribute("title") == "No longer in this list: reload the page to see it as it is."
            page.route("**/admin/django_sqlqueue/job/**", lambda route: route.fulfill(status=500, body="down"))
            page.wait_for_function(
                "document.getElementById('sqlqueue-refresh').innerText.includes('stopped updating')", polling=250
            )
            assert "the server answered 500" in note.inner_text()
            page.screenshot(path=ARTIFACTS / "changelist-stopped-1280.png")
        finally:
            # The ORM was used while the browser ran: inside its event loop it opened a
            # connection of its own, which would outlive the test and block the teardown.
            connections.close_all()
