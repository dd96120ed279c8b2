"""``manage.py sqlqueue_prune``: what it deletes, what it says, and what it refuses."""

from __future__ import annotations

import datetime
import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from django_sqlqueue.db import pruning
from django_sqlqueue.models import Job, JobStatus
from tests.support.finished import finished_job

pytestmark = pytest.mark.django_db

HOUR = datetime.timedelta(hours=1)
DAY = datetime.timedelta(days=1)


def prune(*args: str) -> str:
    out = StringIO()
    call_command("sqlqueue_prune", *args, stdout=out)
    return out.getvalue()


def left() -> set[int]:
    return set(Job.objects.values_list("pk", flat=True))


@pytest.fixture
def jobs() -> dict[str, int]:
    """Jobs of every status, some past the default retention and some not."""
    return {
        "old success": finished_job(JobStatus.SUCCESSFUL, 2 * DAY),
        "new success": finished_job(JobStatus.SUCCESSFUL, 2 * HOUR),
        "old cancelled": finished_job(JobStatus.CANCELLED, 8 * DAY),
        "old failure": finished_job(JobStatus.FAILED, 31 * DAY),
        "new failure": finished_job(JobStatus.FAILED, 3 * HOUR),
        "ready": finished_job(JobStatus.READY, None),
        "running": finished_job(JobStatus.RUNNING, None),
    }


def test_prune_follows_the_default_retention(jobs: dict[str, int]) -> None:
    assert prune() == (
        "Deleted 3 job(s): 1 SUCCESSFUL (finished over 1d ago), 1 CANCELLED (finished over 1w ago), "
        "1 FAILED (finished over 30d ago).\n"
    )
    assert left() == {jobs["new success"], jobs["new failure"], jobs["ready"], jobs["running"]}


def test_dry_run_counts_and_deletes_nothing(jobs: dict[str, int]) -> None:
    assert prune("--dry-run") == (
        "Would delete 3 job(s): 1 SUCCESSFUL (finished over 1d ago), 1 CANCELLED (finished over 1w ago), "
        "1 FAILED (finished over 30d ago).\n"
    )
    assert left() == set(jobs.values())


def test_older_than_and_status_override_the_retention(jobs: dict[str, int]) -> None:
    assert prune("--status", "failed", "--older-than", "2h", "--batch-size", "1") == (
        "Deleted 2 job(s): 2 FAILED (finished over 2h ago).\n"
    )
    assert left() == set(jobs.values()) - {jobs["old failure"], jobs["new failure"]}


def test_statuses_repeated_or_with_commas(jobs: dict[str, int]) -> None:
    assert prune("--status", "SUCCESSFUL,CANCELLED", "--status", "CANCELLED", "--older-than", "90m") == (
        "Deleted 3 job(s): 2 SUCCESSFUL (finished over 90m ago), 1 CANCELLED (finished over 90m ago).\n"
    )


@override_settings(SQLQUEUE_RETENTION={"FAILED": None, "CANCELLED": None})
def test_statuses_kept_for_ever_are_named(jobs: dict[str, int]) -> None:
    assert prune() == (
        "Deleted 1 job(s): 1 SUCCESSFUL (finished over 1d ago); CANCELLED and FAILED kept for ever "
        "(SQLQUEUE_RETENTION).\n"
    )
    assert prune("--status", "FAILED") == "Deleted 0 job(s); FAILED kept for ever (SQLQUEUE_RETENTION).\n"
    assert jobs["old failure"] in left()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than", "7x"], "argument --older-than: '7x' is not a duration such as 3600, 30m, 12h or 7d"),
        (["--older-than", "-1"], "argument --older-than: '-1' is not a duration such as 3600, 30m, 12h or 7d"),
        (["--older-than", "40000d"], "argument --older-than: 40000d is more than 36525 days"),
        (
            ["--status", "READY"],
            "argument --status: 'READY' is not a finished status; use SUCCESSFUL, CANCELLED, FAILED",
        ),
        (["--batch-size", "0"], "argument --batch-size: 0 is less than 1"),
        (["--duty-cycle", "0"], "argument --duty-cycle: 0 is less than 1"),
        (["--duty-cycle", "101"], "argument --duty-cycle: 101 is more than 100"),
    ],
)
def test_bad_options_are_refused(jobs: dict[str, int], args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=f"^Error: {re.escape(message)}$"):
        prune(*args)
    assert left() == set(jobs.values())


class Terminal(StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_progress_bar(jobs: dict[str, int]) -> None:
    out = Terminal()
    call_command("sqlqueue_prune", "--batch-size", "1", stdout=out)
    assert out.getvalue() == (
        f"\r[{'#' * 10}{'.' * 20}] 1/3 jobs"
        f"\r[{'#' * 20}{'.' * 10}] 2/3 jobs"
        f"\r[{'#' * 30}] 3/3 jobs\n"
        "Deleted 3 job(s): 1 SUCCESSFUL (finished over 1d ago), 1 CANCELLED (finished over 1w ago), "
        "1 FAILED (finished over 30d ago).\n"
    )


@pytest.mark.parametrize(
    ("args", "duty_cycle"), [([], 0.25), (["--duty-cycle", "10"], 0.1), (["--duty-cycle", "100"], 1)]
)
def test_it_keeps_to_its_duty_cycle(
    jobs: dict[str, int], monkeypatch: pytest.MonkeyPatch, args: list[str], duty_cycle: float
) -> None:
    asked: list[float] = []
    real = pruning.prune

    def prune_asked(*args: Any, **kwargs: Any) -> pruning.Pruned:
        asked.append(kwargs["duty_cycle"])
        return real(*args, **kwargs)

    monkeypatch.setattr(pruning, "prune", prune_asked)

    prune(*args)

    assert asked == [duty_cycle]
    assert left() == {jobs["new success"], jobs["new failure"], jobs["ready"], jobs["running"]}
