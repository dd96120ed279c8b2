"""The admin in a real browser: headless Chromium (Debian's ``chromium`` package, which
``.ci/run`` installs) driven by Playwright, against the live server and a real
``runworkers``. Screenshots land in ``artifacts/browser/``."""

from __future__ import annotations

import contextlib
import datetime
import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from django_sqlqueue.models import Job, JobStatus
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

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def browser_page() -> Iterator[Any]:
    """A Chromium page; a missing browser fails the test (CI installs it), never skips it."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install chromium (or set SQLQUEUE_CHROMIUM).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 900})
        finally:
            browser.close()


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
        page.goto(f"{live_server.url}/admin/login/?next=/admin/django_sqlqueue/job/")
        page.fill("#id_username", "admin")
        page.fill("#id_password", "password")
        page.click("input[type=submit]")
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
