"""A project's calling code for Django Tasks, written against no backend in particular:
``python -m tests.support.tasks_client enqueue`` enqueues a few tasks and prints their result
ids; ``python -m tests.support.tasks_client report ID...`` prints, as JSON, what each result
says once refreshed."""

from __future__ import annotations

import json
import sys
from typing import Any


def enqueue() -> list[str]:
    from django.db import transaction

    from django_sqlqueue.backends.compat import TaskResult
    from tests.djtasks.tasks import add, async_double, fail, whoami

    with transaction.atomic():
        results: list[TaskResult[..., Any]] = [
            add.enqueue(2, 3),
            add.using(priority=5).enqueue(a=1, b=1),
            fail.enqueue("boom"),
            whoami.enqueue("hi"),
            async_double.enqueue(4),
        ]
    return [result.id for result in results]


def report(ids: list[str]) -> list[dict[str, Any]]:
    from django_sqlqueue.backends.compat import TaskResultStatus, task_backends

    reports = []
    for result_id in ids:
        result = task_backends["default"].get_result(result_id)
        result.refresh()
        reports.append(
            {
                "task": result.task.name,
                "status": result.status,
                "args": result.args,
                "kwargs": result.kwargs,
                "priority": result.task.priority,
                "queue": result.task.queue_name,
                "return_value": result.return_value if result.status == TaskResultStatus.SUCCESSFUL else None,
                "errors": [error.exception_class_path for error in result.errors],
                "attempts": result.attempts,
                "finished": result.is_finished and result.finished_at is not None,
            }
        )
    return reports


if __name__ == "__main__":
    import django

    django.setup()
    command, *arguments = sys.argv[1:]
    print(json.dumps(enqueue() if command == "enqueue" else report(arguments)))
