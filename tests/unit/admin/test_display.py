"""How the admin shows a job's parts (``admin/display.py``) on its pages, with the app's
stylesheet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from django_sqlqueue.models import Job, JobStatus
from tests.support.admin_helpers import CHANGELIST, make_job

pytestmark = pytest.mark.django_db

URL = "https://example.com/" + "a" * 300


def test_an_errors_long_unbroken_message_wraps_on_the_jobs_page(admin_client: Client) -> None:
    """A URL has no space to break at: the stylesheet lets the message break anywhere,
    where it ran past the page's edge, cut off, with nothing to scroll it into view."""
    job = make_job(JobStatus.FAILED, errors=1)
    Job.objects.filter(pk=job.pk).update(
        errors=[{**job.errors[0], "message": f"fetching {URL} failed"}], last_error_class="builtins.RuntimeError"
    )
    page = admin_client.get(f"{CHANGELIST}{job.pk}/change/").content.decode()
    assert 'href="/static/django_sqlqueue/admin.css"' in page
    shown = '<div class="sqlqueue-error"><p><strong>Attempt 1</strong>: builtins.RuntimeError: fetching '
    assert f"{shown}{URL} failed<br>" in page
    stylesheet = finders.find("django_sqlqueue/admin.css")
    assert isinstance(stylesheet, str)
    css = re.sub(r"/\*.*?\*/", "", Path(stylesheet).read_text(encoding="utf-8"), flags=re.S)
    rules = {selector.strip(): body for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)}
    assert "overflow-wrap: anywhere" in rules[".sqlqueue-error p"]
