"""``manage.py sqlqueue_bench`` runs end to end with tiny numbers; its speed is its own output."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from django_sqlqueue.bench import ceiling, measure
from django_sqlqueue.bench.design_tables import DESIGNS
from django_sqlqueue.management.commands.sqlqueue_bench import nothing_else_to_run
from django_sqlqueue.models import Job, JobDependency
from tests.support.workers import UNGUARDED_MANAGE_PY, run_script


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
        wait_samples=3,
        as_json=True,
        stdout=out,
    )
    figures = json.loads(out.getvalue())
    assert (figures["jobs"], figures["processes"], figures["batch_size"]) == (60, 1, 10)
    assert figures["database"].startswith(connection.vendor)
    keys = ("insert_one", "insert_many", "insert_rows", "drain", "drain_whole", "drain_with_backlog", "drain_with_keys")
    for key in keys:
        assert figures[key]["app"] > 0, key
        assert figures[key]["ceiling"] > 0, key
    for key in ("insert_one", "insert_many", "insert_rows", "drain", "drain_whole"):
        assert figures[key]["physical"] > 0, key
    # The start-up of Django and of the processes is in the whole, not between the first claim and the last finish.
    assert figures["drain_whole"]["app"] < figures["drain"]["app"]
    assert figures["drain_whole"]["ceiling"] == figures["drain"]["ceiling"]
    assert figures["drain"]["queues"] == "its own"  # the kept job is not the bench's to run
    assert minimal_tables() == []
    assert figures["drain_with_backlog"]["backlog"] == 30
    assert (figures["drain_with_keys"]["keys"], figures["drain_with_keys"]["key_limit"]) == (3, 2)
    assert 0 <= figures["latency_ms"]["p50"] <= figures["latency_ms"]["p95"] <= figures["latency_ms"]["p99"]
    assert figures["latency_ms"]["enqueue_p50"] > 0
    assert figures["wait_ms"]["p50"] <= figures["wait_ms"]["p95"]
    assert 0 <= figures["wait_ms"]["worker_p50"] <= figures["wait_ms"]["worker_p95"]
    assert figures["wait_ms"]["ceiling_p50"] == 10
    assert list(Job.objects.values_list("pk", flat=True)) == [kept.pk]  # only the bench's own jobs are gone


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_table_shows_each_figure_against_its_ceiling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    out = StringIO()
    call_command("sqlqueue_bench", jobs=40, processes=1, latency_samples=3, wait_samples=3, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"django-sqlqueue benchmark: {connection.vendor}")
    assert lines[1] == (
        "(this project's settings as they are; the drain's workers claim from every queue, "
        "as runworkers does by default)"
    )
    assert lines[2].split() == ["jobs/s", "our", "table/s", "of", "it", "minimal", "table/s", "of", "it"]
    assert [line[:34].strip() for line in lines[3:8]] == [
        "enqueue, one per transaction",
        "enqueue_many",
        "enqueue_rows",
        "drain, start-up included",
        "drain, first claim to last finish",
    ]
    for line in lines[3:8]:
        app, ours, of_ours, minimal, of_minimal = (
            float(cell.rstrip("%").replace(",", "")) for cell in line[34:].split()
        )
        assert shown_share_fits(of_ours, app, ours), line
        assert shown_share_fits(of_minimal, app, minimal), line
    assert lines[8].startswith("  (drain: runworkers --burst, from its start to its exit, and by the database's clock;")
    assert lines[9].startswith("latency, enqueue commit to start: p50 ")
    assert re.search(r"\(from its INSERT; the enqueue, commit included, took p50 \d+\.\d ms\)$", lines[9])
    assert re.fullmatch(
        r"latency, finish commit to Job\.wait\(\) returning: p50 -?\d+\.\d ms \(ceiling 10 ms\), p95 -?\d+\.\d ms "
        r"\(finished by this process\); by runworkers, from its UPDATE, commit included: p50 \d+\.\d ms, "
        r"p95 \d+\.\d ms",
        lines[10],
    )


@pytest.mark.django_db(transaction=True)
def test_our_tables_raw_claim_reads_its_candidates_before_it_locks_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """On MySQL/MariaDB a locking read walked and locked the ready jobs of other queues:
    beside a million, MariaDB ran out of room for locks and stopped itself."""
    drained: list[tuple[str, bool]] = []

    def raw_drain(database: Any, *args: Any) -> ceiling.Drained:
        drained.append((database.table.name, database.table.read_then_lock))
        return ceiling.Drained(1000.0, 0.0)

    monkeypatch.setattr(ceiling, "drain", raw_drain)
    monkeypatch.setattr(measure, "drain", lambda *args, **kwargs: measure.Drain(1000.0, 500.0))
    monkeypatch.setattr(
        measure, "latency", lambda *args, **kwargs: dict.fromkeys(["p50", "p95", "p99", "enqueue_p50"], 1.0)
    )
    monkeypatch.setattr(
        measure, "wait_latency", lambda *args, **kwargs: dict.fromkeys(["p50", "p95", "worker_p50", "worker_p95"], 1.0)
    )
    call_command("sqlqueue_bench", jobs=20, processes=1, stdout=StringIO())
    ours = connection.ops.quote_name(Job._meta.db_table)
    assert (ours, True) in drained
    assert [read_then_lock for name, read_then_lock in drained if name != ours] == [False]  # the minimal table


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_minimal_table_is_dropped_when_the_run_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))

    def worker_crashed(*args: object, **kwargs: object) -> float:
        raise RuntimeError("runworkers exited with status 1")

    monkeypatch.setattr(measure, "drain", worker_crashed)
    with pytest.raises(RuntimeError, match="status 1"):
        call_command("sqlqueue_bench", jobs=20, processes=1, latency_samples=3, stdout=StringIO())
    assert minimal_tables() == []
    assert not Job.objects.exists()


def shown_share_fits(percent: float, app: float, ceiling: float) -> bool:
    """Whether a printed share fits its printed figures, each rounded to the unit."""
    low, high = 100 * (app - 0.5) / (ceiling + 0.5), 100 * (app + 0.5) / (ceiling - 0.5)
    return low - 0.5 <= percent <= high + 0.5


def minimal_tables() -> list[str]:
    with connection.cursor() as cursor:
        return [name for name in connection.introspection.table_names(cursor) if "bench_minimal" in name]


@pytest.mark.django_db
def test_the_drain_claims_from_every_queue_only_when_nothing_else_could_run(settings: Any) -> None:
    assert nothing_else_to_run("sqlqueue-bench-x")
    Job.objects.enqueue("tests.testapp.tasks.add", (1, 2), queue="sqlqueue-bench-x")
    assert nothing_else_to_run("sqlqueue-bench-x")  # its own jobs
    finished = Job.objects.enqueue("tests.testapp.tasks.add", (1, 2), queue="other")
    assert not nothing_else_to_run("sqlqueue-bench-x")
    Job.objects.filter(pk=finished.pk).update(status="SUCCESSFUL")
    assert nothing_else_to_run("sqlqueue-bench-x")
    settings.SQLQUEUE_SCHEDULE = {"ping": {"task": "tests.testapp.tasks.add", "every": 5}}
    assert not nothing_else_to_run("sqlqueue-bench-x")  # a recurring job could fall due meanwhile


@pytest.mark.slow
def test_the_benchmark_runs_from_a_manage_py_without_a_main_guard(
    child_env: dict[str, str], python: str, tmp_path: Path
) -> None:
    """Its raw drain's processes are spawned: they would run such a manage.py, and the
    benchmark in it, again (and fail, starting processes while they start)."""
    bench = ("sqlqueue_bench", "--jobs", "30", "--processes", "1", "--latency-samples", "2", "--wait-samples", "2")
    finished = run_script(python, tmp_path / "manage.py", UNGUARDED_MANAGE_PY, *bench, env=child_env, timeout=300)
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.count("django-sqlqueue benchmark:") == 1, finished.stdout
    assert "drain, start-up included" in finished.stdout


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_each_table_design_drains_on_its_own_scratch_tables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    out = StringIO()
    call_command(
        "sqlqueue_bench", jobs=50, processes=2, batch_size=10, designs=list(DESIGNS), rounds=2, as_json=True, stdout=out
    )
    figures = json.loads(out.getvalue())
    unsupported = {
        "postgresql": {"read-then-lock"},
        "mysql": {"fillfactor"},
        "sqlite": {"fillfactor", "read-then-lock"},
    }[connection.vendor]
    assert set(figures["unsupported"]) == unsupported
    assert set(figures["designs"]) == {"minimal", *DESIGNS} - unsupported
    for name, drained in figures["designs"].items():
        assert len(drained["per_second"]) == 2, name
        assert all(rate > 0 for rate in drained["per_second"]), name
        assert all(lost >= 0 for lost in drained["lost_per_job"]), name
    assert scratch_tables() == []
    assert not Job.objects.exists()  # the designs' jobs never touch the jobs table


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_designs_table_shows_a_figure_per_design_and_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    out = StringIO()
    call_command("sqlqueue_bench", jobs=30, processes=1, designs=["partial", "fillfactor"], rounds=1, stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(f"django-sqlqueue table designs: {connection.vendor}")
    assert lines[2].split() == ["round", "1", "of", "minimal", "of", "today", "lost/job"]
    made = ["minimal", "today", "partial"] + (["fillfactor"] if connection.vendor == "postgresql" else [])
    rows = {line.split()[0]: line.split()[1:] for line in lines[3 : 3 + len(made)]}
    assert list(rows) == made
    assert all(len(cells) == 4 for cells in rows.values())  # jobs/s, the two shares, lost per job
    assert (rows["minimal"][1], rows["today"][2]) == ("100%", "100%")
    if connection.vendor != "postgresql":
        assert lines[-1].startswith("fillfactor: not made on this database: InnoDB and SQLite have no table fillfactor")


def scratch_tables() -> list[str]:
    with connection.cursor() as cursor:
        return [name for name in connection.introspection.table_names(cursor) if "sqlqueue_bench" in name]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_workflow_benchmark_times_a_chord_and_a_chain_and_removes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    kept = Job.objects.enqueue("tests.testapp.tasks.add", (1, 2))
    waiting = Job.objects.enqueue("tests.testapp.tasks.add", (3, 4), after=[kept])
    out = StringIO()
    call_command(
        "sqlqueue_bench", workflow=True, chord=20, chain=4, processes=2, batch_size=5, as_json=True, stdout=out
    )
    figures = json.loads(out.getvalue())
    assert figures["database"].startswith(connection.vendor)
    assert (figures["processes"], figures["batch_size"], figures["queues"]) == (2, 5, "its own")
    chord, chain = figures["chord"], figures["chain"]
    assert (chord["jobs"], chain["steps"]) == (20, 4)
    assert min(chord["enqueue_s"], chord["run_s"], chain["enqueue_s"], chain["run_s"]) > 0
    assert chord["callback_ms"] >= 0  # released by the last job's finish, claimed after it
    assert chain["per_step_ms"] == pytest.approx(chain["run_s"] * 1000 / 4)
    # Only the benchmark's own jobs and links are gone.
    assert sorted(Job.objects.values_list("pk", flat=True)) == [kept.pk, waiting.pk]
    assert list(JobDependency.objects.values_list("child_id", "parent_id")) == [(waiting.pk, kept.pk)]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_workflow_benchmark_prints_its_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    out = StringIO()
    call_command("sqlqueue_bench", workflow=True, chord=10, chain=3, processes=1, stdout=out)
    lines = out.getvalue().splitlines()
    assert (
        lines[0]
        == f"django-sqlqueue workflows: {connection.vendor} {connection.display_name}, 1 processes, batches of 100"
    )
    assert lines[1] == (
        "(this project's settings as they are; the workers claim from every queue, as runworkers does by default)"
    )
    number = r"\d+\.\d+"
    assert re.fullmatch(
        rf"chord: 10 jobs and a callback after them all: enqueued in {number} s, run in {number} s "
        rf"\([\d,]+ jobs/s\); the callback started {number} ms after the last of them finished",
        lines[2],
    ), lines[2]
    assert re.fullmatch(
        rf"chain: 3 steps, each after the one before: enqueued in {number} s, run in {number} s, {number} ms per step",
        lines[3],
    ), lines[3]
    assert len(lines) == 4
    assert not Job.objects.exists()
    assert not JobDependency.objects.exists()


@pytest.mark.django_db
def test_the_workflow_benchmark_is_not_run_with_the_designs() -> None:
    with pytest.raises(CommandError, match="--workflow and --designs measure different things"):
        call_command("sqlqueue_bench", workflow=True, designs=["partial"], stdout=StringIO())
