"""``manage.py sqlqueue_bench``: measure this database's ceiling and the queue beside it."""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import connections
from django.db.backends.base.base import BaseDatabaseWrapper

from django_sqlqueue.bench import ceiling, measure
from django_sqlqueue.bench import design_tables as table_designs
from django_sqlqueue.bench import designs as bench_designs
from django_sqlqueue.bench import workflows as bench_workflows
from django_sqlqueue.bench.raw import RawDatabase, jobs_table
from django_sqlqueue.conf import conf
from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.management.arguments import claim_limit, non_negative_int, positive_int
from django_sqlqueue.management.base import QueueCommand
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import ACTIVE

#: The most the median of the finish-to-wait latency may be, in milliseconds.
WAIT_CEILING_MS = 10.0


def nothing_else_to_run(queue: str) -> bool:
    """Whether the drain may claim from every queue, as the Quickstart's ``runworkers``
    does, without running anyone's jobs but the benchmark's: no other queue holds ready
    or running jobs, and no recurring job could fall due meanwhile."""
    others = Job.objects.exclude(queue=queue).filter(status__in=ACTIVE)
    return not conf.SQLQUEUE_SCHEDULE and not others.exists()


class Command(QueueCommand):
    help = (
        "Measure the queue on the configured database, with this project's settings as they are, "
        "beside raw SQL doing the same work on the jobs table and on a minimal queue table made "
        "for the run. It writes to the jobs table on queues named sqlqueue-bench-*, and removes "
        "them and the minimal table after."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--jobs", type=positive_int, default=20_000, help="Jobs to drain (default 20000).")
        parser.add_argument("--processes", type=positive_int, default=2, help="Worker processes (default 2).")
        parser.add_argument("--batch-size", type=claim_limit, default=100, help="Claim batch size (default 100).")
        parser.add_argument(
            "--backlog", type=int, default=0, help="Also drain beside N other ready and N finished jobs."
        )
        parser.add_argument(
            "--keys", type=non_negative_int, default=0, help="Also drain with the jobs over N concurrency keys."
        )
        parser.add_argument(
            "--key-limit", type=positive_int, default=10, help="Jobs of one key running at once (default 10)."
        )
        parser.add_argument("--latency-samples", type=positive_int, default=40, help="Enqueues timed (default 40).")
        parser.add_argument(
            "--wait-samples", type=positive_int, default=200, help="Job.wait() calls timed (default 200)."
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the figures as JSON.")
        parser.add_argument(
            "--designs",
            nargs="+",
            choices=list(table_designs.DESIGNS),
            default=[],
            metavar="DESIGN",
            help=(
                "Instead of the usual figures, drain in raw SQL on scratch tables of other designs of the jobs "
                "table, made and dropped for each drain, beside the minimal table and today's table: "
                + "; ".join(f"{name}: {what}" for name, what in table_designs.DESIGNS.items())
                + "."
            ),
        )
        parser.add_argument(
            "--workflow",
            action="store_true",
            help=(
                "Instead of the usual figures, time a chord (--chord jobs and a callback after them all) and a "
                "chain (--chain steps, each after the one before), each enqueued and run by runworkers --burst."
            ),
        )
        parser.add_argument(
            "--chord", type=positive_int, default=5000, help="With --workflow: the chord's jobs (default 5000)."
        )
        parser.add_argument(
            "--chain", type=positive_int, default=300, help="With --workflow: the chain's steps (default 300)."
        )
        parser.add_argument(
            "--rounds",
            type=positive_int,
            default=2,
            help="With --designs: drain each this many times, every other round in reverse order (default 2).",
        )

    def handle(
        self,
        *,
        jobs: int,
        processes: int,
        batch_size: int,
        backlog: int,
        keys: int,
        key_limit: int,
        latency_samples: int,
        wait_samples: int,
        as_json: bool,
        designs: list[str],
        rounds: int,
        workflow: bool,
        chord: int,
        chain: int,
        **options: Any,
    ) -> None:
        connection = connections[queue_db(Job)]
        table = connection.ops.quote_name(Job._meta.db_table)
        # On MySQL/MariaDB our table is claimed as the app claims it, its candidates read
        # before they are locked: a locking read may walk the ready jobs of every other
        # queue and lock each, and enough of them fill the buffer pool with locks until
        # MariaDB stops itself. The minimal table holds the run's rows alone.
        raw = RawDatabase.of(connection, replace(jobs_table(table), read_then_lock=True))
        prefix = f"sqlqueue-bench-{secrets.token_hex(3)}"
        if workflow and designs:
            raise CommandError("--workflow and --designs measure different things: give one of them.")
        if workflow:
            self._workflow(engine(connection).server, prefix, chord, chain, processes, batch_size, as_json)
            return
        if designs:
            self._designs(connection, raw, designs, prefix, jobs, processes, batch_size, rounds, as_json)
            return
        singles = max(1, min(jobs // 10, 2000))
        figures: dict[str, Any] = {
            "database": engine(connection).server,
            "jobs": jobs,
            "processes": processes,
            "batch_size": batch_size,
        }
        try:
            with raw.minimal() as minimal:
                figures["insert_one"] = {
                    "app": measure.enqueue_one_by_one(f"{prefix}-one", singles),
                    "ceiling": ceiling.insert_one_per_transaction(raw, f"{prefix}-one-raw", singles),
                    "physical": ceiling.insert_one_per_transaction(minimal, prefix, singles),
                }
                Job.objects.filter(queue__startswith=f"{prefix}-one").delete()
                app_rows = measure.enqueue_rows(f"{prefix}-rows", jobs)
                Job.objects.filter(queue=f"{prefix}-rows").delete()
                app_many = measure.enqueue_many(f"{prefix}-drain", jobs)
                every_queue = nothing_else_to_run(f"{prefix}-drain")
                app_drain = measure.drain(f"{prefix}-drain", jobs, processes, batch_size, every_queue=every_queue)
                many = {
                    "ceiling": ceiling.insert_many_per_statement(raw, f"{prefix}-raw", jobs),
                    "physical": ceiling.insert_many_per_statement(minimal, f"{prefix}-raw", jobs),
                }
                figures["insert_many"] = {"app": app_many, **many}
                figures["insert_rows"] = {"app": app_rows, **many}
                ceilings = {
                    "ceiling": ceiling.drain(raw, f"{prefix}-raw", jobs, processes, batch_size).per_second,
                    "physical": ceiling.drain(minimal, f"{prefix}-raw", jobs, processes, batch_size).per_second,
                }
                figures["drain"] = {
                    "app": app_drain.running,
                    **ceilings,
                    "queues": "all" if every_queue else "its own",
                }
                figures["drain_whole"] = {"app": app_drain.whole, **ceilings}
            if backlog:
                ceiling.insert_many_per_statement(raw, f"{prefix}-backlog", backlog)
                succeeded = replace(raw, table=jobs_table(table, succeeded=True))
                ceiling.insert_many_per_statement(succeeded, f"{prefix}-finished", backlog)
                measure.enqueue_many(f"{prefix}-drain2", jobs)
                figures["drain_with_backlog"] = {
                    "app": measure.drain(f"{prefix}-drain2", jobs, processes, batch_size).running,
                    "ceiling": figures["drain"]["app"],
                    "backlog": backlog,
                }
            if keys:
                measure.enqueue_many(f"{prefix}-keyed", jobs, keys=keys, key_limit=key_limit)
                figures["drain_with_keys"] = {
                    "app": measure.drain(f"{prefix}-keyed", jobs, processes, batch_size).running,
                    "ceiling": figures["drain"]["app"],
                    "keys": keys,
                    "key_limit": key_limit,
                }
            figures["latency_ms"] = measure.latency(f"{prefix}-latency", latency_samples, processes, spacing=0.15)
            figures["wait_ms"] = {
                **measure.wait_latency(f"{prefix}-wait", wait_samples),
                "ceiling_p50": WAIT_CEILING_MS,
            }
        finally:
            Job.objects.filter(queue__startswith=prefix).delete()
        if as_json:
            self.stdout.write(json.dumps(figures, indent=2))
        else:
            self._table(figures)

    def _designs(
        self,
        connection: BaseDatabaseWrapper,
        raw: RawDatabase,
        names: list[str],
        queue: str,
        jobs: int,
        processes: int,
        batch_size: int,
        rounds: int,
        as_json: bool,
    ) -> None:
        """Drain the designs ``names`` (today's always among them) beside the minimal table."""
        wanted = dict.fromkeys(["today", *names])
        unsupported = {name: why for name in wanted if (why := table_designs.unsupported(name, connection))}
        made = [name for name in wanted if name not in unsupported]
        drains = bench_designs.drain_designs(connection, raw, made, queue, jobs, processes, batch_size, rounds)
        figures: dict[str, Any] = {
            "database": engine(connection).server,
            "jobs": jobs,
            "processes": processes,
            "batch_size": batch_size,
            "rounds": rounds,
            "designs": {
                name: {
                    "per_second": [drained.per_second for drained in done],
                    "lost_per_job": [drained.lost_per_job for drained in done],
                }
                for name, done in drains.items()
            },
            "unsupported": unsupported,
        }
        if as_json:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        self.stdout.write(
            f"django-sqlqueue table designs: {figures['database']}, {jobs} jobs, {processes} processes, "
            f"batches of {batch_size}, {rounds} rounds"
        )
        self.stdout.write("(raw SQL drains on scratch tables; each share is of the same round's drain)")
        header = "".join(f"{f'round {turn + 1}':>10}" for turn in range(rounds))
        self.stdout.write(f"{'':16}{header}{'of minimal':>14}{'of today':>12}{'lost/job':>10}")
        for name, shown in figures["designs"].items():
            rates = shown["per_second"]
            cells = "".join(f"{rate:>10,.0f}" for rate in rates)
            shares = [
                _share_range(rates, figures["designs"][reference]["per_second"]) for reference in ("minimal", "today")
            ]
            lost = max(shown["lost_per_job"])
            self.stdout.write(f"{name:16}{cells}{shares[0]:>14}{shares[1]:>12}{lost:>10.2f}")
        for name, why in unsupported.items():
            self.stdout.write(f"{name}: not made on this database: {why}")

    def _workflow(
        self, database: str, prefix: str, count: int, steps: int, processes: int, batch_size: int, as_json: bool
    ) -> None:
        """A chord of ``count`` jobs and a chain of ``steps`` (``bench/workflows``), each on
        a queue of its own; their jobs and links are removed after, whatever happens."""
        every_queue = nothing_else_to_run(f"{prefix}-chord")
        figures: dict[str, Any] = {
            "database": database,
            "processes": processes,
            "batch_size": batch_size,
            "queues": "all" if every_queue else "its own",
        }
        try:
            timed = bench_workflows.chord(f"{prefix}-chord", count, processes, batch_size, every_queue=every_queue)
            figures["chord"] = {"jobs": count, **timed}
            timed = bench_workflows.chain(f"{prefix}-chain", steps, processes, batch_size, every_queue=every_queue)
            figures["chain"] = {"steps": steps, **timed}
        finally:
            bench_workflows.remove(Job.objects.filter(queue__startswith=prefix))
        if as_json:
            self.stdout.write(json.dumps(figures, indent=2))
            return
        self.stdout.write(f"django-sqlqueue workflows: {database}, {processes} processes, batches of {batch_size}")
        self.stdout.write(f"(this project's settings as they are; the workers claim from {_claiming(figures)})")
        chord, chain = figures["chord"], figures["chain"]
        self.stdout.write(
            f"chord: {count:,} jobs and a callback after them all: enqueued in {chord['enqueue_s']:.2f} s, "
            f"run in {chord['run_s']:.2f} s ({(count + 1) / chord['run_s']:,.0f} jobs/s); the callback started "
            f"{chord['callback_ms']:.1f} ms after the last of them finished"
        )
        self.stdout.write(
            f"chain: {steps:,} steps, each after the one before: enqueued in {chain['enqueue_s']:.2f} s, "
            f"run in {chain['run_s']:.2f} s, {chain['per_step_ms']:.1f} ms per step"
        )

    def _table(self, figures: dict[str, Any]) -> None:
        self.stdout.write(
            f"django-sqlqueue benchmark: {figures['database']}, {figures['jobs']} jobs, "
            f"{figures['processes']} processes, batches of {figures['batch_size']}"
        )
        self.stdout.write(
            f"(this project's settings as they are; the drain's workers claim from {_claiming(figures['drain'])})"
        )
        self.stdout.write(f"{'':34}{'jobs/s':>10}{'our table/s':>13}{'of it':>7}{'minimal table/s':>17}{'of it':>7}")
        rows = [
            ("enqueue, one per transaction", "insert_one"),
            ("enqueue_many", "insert_many"),
            ("enqueue_rows", "insert_rows"),
            ("drain, start-up included", "drain_whole"),
            ("drain, first claim to last finish", "drain"),
            ("drain beside the backlog", "drain_with_backlog"),
            ("drain with concurrency keys", "drain_with_keys"),
        ]
        for label, key in rows:
            if key in figures:
                app, top = figures[key]["app"], figures[key]["ceiling"]
                line = f"{label:34}{app:>10,.0f}{top:>13,.0f}{app / top:>7.0%}"
                if "physical" in figures[key]:
                    physical = figures[key]["physical"]
                    line += f"{physical:>17,.0f}{app / physical:>7.0%}"
                self.stdout.write(line)
        self.stdout.write(
            "  (drain: runworkers --burst, from its start to its exit, and by the database's clock; "
            "the ceilings' from their first claim to their last finish)"
        )
        if "drain_with_backlog" in figures:
            self.stdout.write(
                f"  (backlog: {figures['drain_with_backlog']['backlog']:,} ready + as many finished jobs; "
                "its ceiling is the drain on the emptier table)"
            )
        if "drain_with_keys" in figures:
            keyed = figures["drain_with_keys"]
            self.stdout.write(
                f"  (keys: the jobs take turns over {keyed['keys']:,} concurrency keys, each limited to "
                f"{keyed['key_limit']:,} running at once; its ceiling is the drain without keys)"
            )
        latency = figures["latency_ms"]
        self.stdout.write(
            f"latency, enqueue commit to start: p50 {latency['p50']:.1f} ms, "
            f"p95 {latency['p95']:.1f} ms, p99 {latency['p99']:.1f} ms (from its INSERT; the enqueue, "
            f"commit included, took p50 {latency['enqueue_p50']:.1f} ms)"
        )
        waited = figures["wait_ms"]
        self.stdout.write(
            f"latency, finish commit to Job.wait() returning: p50 {waited['p50']:.1f} ms (ceiling "
            f"{waited['ceiling_p50']:g} ms), p95 {waited['p95']:.1f} ms (finished by this process); by runworkers, "
            f"from its UPDATE, commit included: p50 {waited['worker_p50']:.1f} ms, p95 {waited['worker_p95']:.1f} ms"
        )


def _claiming(figures: dict[str, Any]) -> str:
    """Which queues the workers of a run claimed from, by its ``queues`` figure."""
    if figures["queues"] == "all":
        return "every queue, as runworkers does by default"
    return "their own queue alone, as other queues hold ready or running jobs, or recurring jobs are set"


def _share_range(rates: list[float], references: list[float]) -> str:
    """The lowest and highest of ``rates`` as shares of the same round's ``references``."""
    shares = sorted(rate / reference for rate, reference in zip(rates, references, strict=True))
    low, high = f"{shares[0]:.0%}", f"{shares[-1]:.0%}"
    return low if low == high else f"{low}-{high.removesuffix('%')}%"
