"""``manage.py sqlqueue_bench`` runs end to end with tiny numbers; its speed is its own output."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from django_sqlqueue.models import Job


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_benchmark_runs_and_cleans_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))  # for its worker processes
    kept = Job.objects.enqueue("tests.testapp.tasks.add", (1, 2))
    out = StringIO()
    call_command(
        "sqlqueue_bench",
        jobs=60,
        processes=1,
        batch_size=10,
        backlog=30,
        keys=3,
        key_limit=2,
        latency_samples=3,
        as_json=True,
        stdout=out,
    )
    figures = json.loads(out.getvalue())
    assert (figures["jobs"], figures["processes"], figures["batch_size"]) == (60, 1, 10)
    assert figures["database"].startswith(connection.vendor)
    for key in ("insert_one", "insert_many", "drain", "drain_with_backlog", "drain_with_keys"):
        assert figures[key]["app"] > 0, key
        assert figures[key]["ceiling"] > 0, key
    assert figures["drain_with_backlog"]["backlog"] == 30
    assert (figures["drain_with_keys"]["keys"], figures["drain_with_keys"]["key_limit"]) == (3, 2)
    assert 0 <= figures["latency_ms"]["p50"] <= figures["latency_ms"]["p95"] <= figures["latency_ms"]["p99"]
    assert list(Job.objects.values_list("pk", flat=True)) == [kept.pk]  # only the bench's own jobs are gone


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_table_shows_each_figure_against_its_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    out = StringIO()
    call_command("sqlqueue_bench", jobs=40, processes=1, latency_samples=3, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"django-sqlqueue benchmark: {connection.vendor}")
    assert lines[1].split() == ["jobs/s", "ceiling/s", "of", "ceiling"]
    assert [line[:34].strip() for line in lines[2:5]] == [
        "enqueue, one per transaction",
        "enqueue_many",
        "drain: runworkers --burst",
    ]
    assert all(line.rstrip().endswith("%") for line in lines[2:5])
    assert lines[5].startswith("latency, enqueue commit to start: p50 ")
