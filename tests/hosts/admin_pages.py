"""``python -m tests.hosts.admin_pages``: what a superuser sees on the jobs' admin pages,
as one JSON object: the changelist's count, the overview's jobs by status (summed over
the queues) and the warnings the pages logged. With ``--setup`` it makes the superuser
first (``looker``), which must reach the replica before the pages are read there.

Sessions are signed cookies: a session written to the primary at login may not have
reached a lagging replica, where the router reads it."""

from __future__ import annotations

import json
import logging
import sys


def main() -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings
    from django.test.utils import setup_test_environment

    user_model = get_user_model()
    if "--setup" in sys.argv:
        user_model.objects.create_superuser("looker", "looker@example.com", "-")
        return
    setup_test_environment()  # responses keep their context
    warnings: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: warnings.append(record.getMessage())  # type: ignore[method-assign]
    handler.setLevel(logging.WARNING)
    logging.getLogger("django_sqlqueue").addHandler(handler)
    with override_settings(SESSION_ENGINE="django.contrib.sessions.backends.signed_cookies"):
        client = Client()
        client.force_login(user_model.objects.get(username="looker"))
        changelist = client.get("/admin/django_sqlqueue/job/")
        overview = client.get("/admin/django_sqlqueue/job/overview/")
    assert changelist.status_code == overview.status_code == 200, (changelist, overview)
    by_status: dict[str, int] = {}
    for queue in overview.context["queues"]:
        for status, count in queue.counts.items():
            by_status[status] = by_status.get(status, 0) + count
    shown = {"changelist": changelist.context["cl"].result_count, "overview": by_status, "warnings": warnings}
    print(json.dumps(shown))


if __name__ == "__main__":
    main()
