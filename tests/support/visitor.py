"""A visitor of a docs project (the README's Quickstart, the tutorial's project), run
inside it as ``python visitor.py ACTION [ARG]`` with its settings: what a person does in
the browser, through Django's test client, printed as one JSON object.

- ``checkout ORDER_ID``: POST the order to the project's ``/checkout/`` view.
- ``jobs``: every job, oldest first, as the database has it.
- ``retry``: as a superuser, open the admin's failures page and press each group's
  Retry button (the form's own action and hidden fields).
- ``session PAGE``: the ``pycon`` blocks of a Markdown page, typed into this project's
  shell: run as doctests, each block with fresh names."""

from __future__ import annotations

import doctest
import html
import io
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import reverse  # noqa: E402

from django_sqlqueue.models import Job  # noqa: E402

#: DEBUG's default hosts accept localhost; the test client's own "testserver" is not one.
HOST = "localhost"
RETRY_FORM = re.compile(
    r'<form method="post" action="(?P<action>[^"]+/retry/)">.*?name="task" value="(?P<task>[^"]*)">'
    r'.*?name="error_class" value="(?P<error_class>[^"]*)">',
    re.DOTALL,
)
PYCON = re.compile(r"^```pycon\n(.*?)^```$", re.MULTILINE | re.DOTALL)
MESSAGE = re.compile(r'<li class="(?:success|info|warning|error)">(.*?)</li>', re.DOTALL)


def checkout(order_id: str) -> dict[str, Any]:
    response = Client(HTTP_HOST=HOST).post("/checkout/", {"order_id": order_id})
    return {"status_code": response.status_code, "body": response.json()}


def jobs() -> dict[str, Any]:
    rows = Job.objects.order_by("pk").values("pk", "task", "status", "attempts", "result", "errors")
    return {
        "jobs": [{**row, "errors": [error["exception_class_path"] for error in row["errors"] or []]} for row in rows]
    }


def retry() -> dict[str, Any]:
    admin, _ = get_user_model().objects.get_or_create(username="admin", is_staff=True, is_superuser=True)
    client = Client(HTTP_HOST=HOST)
    client.force_login(admin)
    page = client.get(reverse("admin:django_sqlqueue_job_failures"))
    pressed = []
    for form in RETRY_FORM.finditer(page.text):
        data = {name: html.unescape(form[name]) for name in ("task", "error_class")}
        answer = client.post(html.unescape(form["action"]), data, follow=True)
        pressed.append({**data, "status_code": answer.status_code, "messages": MESSAGE.findall(answer.text)})
    return {"page_status_code": page.status_code, "pressed": pressed}


def session(page: str) -> dict[str, Any]:
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    parser = doctest.DocTestParser()
    report = io.StringIO()
    blocks = PYCON.findall(Path(page).read_text(encoding="utf-8"))
    results = [
        runner.run(parser.get_doctest(block, {}, f"{page} block {number}", page, 0), out=report.write)
        for number, block in enumerate(blocks)
    ]
    return {
        "blocks": len(blocks),
        "attempted": sum(result.attempted for result in results),
        "failed": sum(result.failed for result in results),
        "report": report.getvalue(),
    }


ACTIONS: dict[str, Callable[..., dict[str, Any]]] = {
    "checkout": checkout,
    "jobs": jobs,
    "retry": retry,
    "session": session,
}

if __name__ == "__main__":
    print(json.dumps(ACTIONS[sys.argv[1]](*sys.argv[2:]), default=str))
