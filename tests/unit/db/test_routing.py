"""The queue under the usual primary/replica router: reads may go to a replica, but
everything the queue writes, locks or listens to goes to the primary
(``db.routing.queue_db``), and the figures that only look read on the replica
(``db.routing.read_db``). The replica here is a read-only connection to the same
database (``tests/settings.py``), so a write that strays there fails loudly; the
multi-host suite has a real streaming standby (``tests/hosts/test_replica.py``)."""

from __future__ import annotations

import datetime
import io
import threading
from collections.abc import Callable, Iterator

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connections, router, transaction
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from django_sqlqueue.db import rollup
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.maintenance.rescue import rescue_expired
from django_sqlqueue.metrics.collector import scrape_registry
from django_sqlqueue.models import Job, JobStatus, Worker
from django_sqlqueue.runner.wakeup import Waiter
from tests.support.admin_helpers import CHANGELIST, action
from tests.testapp.tasks import add, noop

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "replica"])


@pytest.fixture(autouse=True)
def primary_and_replica() -> Iterator[None]:
    with override_settings(DATABASE_ROUTERS=["tests.support.routers.PrimaryReplicaRouter"]):
        yield


def on_primary() -> dict[int, str]:
    return dict(Job.objects.using("default").values_list("pk", "status"))


def test_the_router_sends_reads_to_the_read_only_replica() -> None:
    assert (router.db_for_read(Job), router.db_for_write(Job), queue_db(Job)) == ("replica", "default", "default")
    with pytest.raises(DatabaseError):
        Job.objects.using("replica").update(priority=1)


def test_enqueue_and_enqueue_many_write_to_the_primary() -> None:
    one = Job.objects.enqueue(noop)
    many = Job.objects.enqueue_many(Job.objects.build(noop, (n,)) for n in range(3))
    assert set(on_primary()) >= {one.pk} | {job.pk for job in many if job.pk}
    assert len(on_primary()) == 4


def test_enqueue_joins_the_callers_transaction_on_the_primary() -> None:
    def checkout() -> None:
        with transaction.atomic(using="default"):
            Job.objects.enqueue(noop)
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        checkout()
    assert on_primary() == {}


def test_claim_finish_and_release_work_on_the_primary() -> None:
    Job.objects.enqueue_many(Job.objects.build(add, (n, n)) for n in range(3))
    first, second, third = Job.objects.claim(worker_id="w", limit=3)
    assert Job.objects.finish(worker_id="w", succeeded={first: 2}, failed={second: RuntimeError("boom")}) == 2
    assert Job.objects.release(worker_id="w", unstarted=[third]) == 1
    assert on_primary() == {first.pk: JobStatus.SUCCESSFUL, second.pk: JobStatus.READY, third.pk: JobStatus.READY}


def test_rescue_gives_back_the_jobs_of_an_expired_worker() -> None:
    Worker.objects.create(name="dead", host="h", pid=1)
    Worker.objects.filter(name="dead").update(heartbeat_at=datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc))
    Job.objects.enqueue(noop)
    [held] = Job.objects.claim(worker_id="dead")
    assert rescue_expired().count == 1
    assert on_primary() == {held.pk: JobStatus.READY}


def test_idle_workers_listen_on_the_primary() -> None:
    assert Waiter(threading.Event()).alias == "default"


def test_admin_changes_write_to_the_primary(admin_client: Client) -> None:
    job = Job.objects.enqueue(noop)
    response = action(admin_client, "cancel", [job])
    assert response.status_code == 302
    assert on_primary() == {job.pk: JobStatus.CANCELLED}


def queue_tables_read(look: Callable[[], object]) -> set[str]:
    """The aliases on which ``look`` ran statements on the queue's tables."""
    with (
        CaptureQueriesContext(connections["default"]) as primary,
        CaptureQueriesContext(connections["replica"]) as replica,
    ):
        look()
    return {
        alias
        for alias, captured in (("default", primary), ("replica", replica))
        if any("sqlqueue" in query["sql"] for query in captured)
    }


@pytest.mark.parametrize("database", [None, "replica"])
def test_sqlqueue_stats_reads_on_the_replica(database: str | None) -> None:
    Job.objects.enqueue(noop)
    out = io.StringIO()
    read = queue_tables_read(
        lambda: call_command("sqlqueue_stats", "--json", *(["--database", database] if database else []), stdout=out)
    )
    assert '"READY": 1' in out.getvalue()
    assert read == {"replica"}


def test_sqlqueue_stats_reads_on_the_database_it_is_given() -> None:
    read = queue_tables_read(lambda: call_command("sqlqueue_stats", "--database", "default", stdout=io.StringIO()))
    assert read == {"default"}


def test_the_metrics_read_on_the_replica() -> None:
    Job.objects.enqueue(noop)
    read = queue_tables_read(lambda: list(scrape_registry().collect()))
    assert read == {"replica"}


@pytest.mark.parametrize(
    "page", [CHANGELIST, f"{CHANGELIST}overview/", f"{CHANGELIST}failures/", "/admin/django_sqlqueue/worker/"]
)
def test_the_admins_pages_read_on_the_replica(admin_client: Client, page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[str] = []
    # The overview's charts count their closed hours first: on the primary, as that writes.
    monkeypatch.setattr(rollup, "catch_up", lambda using, **options: counted.append(using))
    Job.objects.enqueue(noop)
    read = queue_tables_read(lambda: admin_client.get(page))
    assert read == {"replica"}
    assert counted == (["default"] if page.endswith("overview/") else [])
