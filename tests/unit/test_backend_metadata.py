"""Django's task metadata (in its development version) as a job's ``meta``
(``backends/metadata.py``): given at enqueue, read and changed by the task, saved whether
it returned or raised, shown in the admin. Django 5.2 to 6.1 have no metadata: there the
mapping is exercised through a context shaped as the development version's, and the
end-to-end test runs where the installed Django has the API."""

from __future__ import annotations

import dataclasses
import types
from typing import Any, cast

import pytest
from django.test import Client

from django_sqlqueue.backends import SQLQueueBackend, SQLQueueTask, metadata, running
from django_sqlqueue.backends.compat import TaskResult, TaskResultDoesNotExist, TaskResultStatus, task_backends
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.runner.current import current_job
from django_sqlqueue.testing import run_jobs
from tests.djtasks import tasks

# As our backend makes them (their type is Django's).
add = cast(SQLQueueTask, tasks.add)
note_metadata = cast(SQLQueueTask, tasks.note_metadata)

pytestmark = pytest.mark.django_db


@dataclasses.dataclass
class DevelopmentContext:
    """Django's development version's ``TaskContext``, as far as metadata goes: a copy of
    the job's metadata less its reserved keys, saved through the backend with them."""

    task_result: TaskResult[..., Any]
    metadata: dict[str, Any] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        handle = current_job()
        assert handle is not None
        self.raw = handle.meta
        self.metadata = {key: value for key, value in self.raw.items() if not key.startswith("_")}

    @property
    def attempt(self) -> int:
        return self.task_result.attempts

    @property
    def metadata_modified(self) -> bool:
        return self.metadata != {key: value for key, value in self.raw.items() if not key.startswith("_")}

    def save_metadata(self) -> None:
        raw = {key: value for key, value in self.raw.items() if key.startswith("_")} | self.metadata
        cast(SQLQueueBackend, self.task_result.task.get_backend()).save_metadata(self.task_result, raw)
        self.raw = raw


@pytest.fixture
def development_context(monkeypatch: pytest.MonkeyPatch) -> None:
    if not metadata.SUPPORTED:
        monkeypatch.setattr(running, "TaskContext", DevelopmentContext)


def test_the_backend_says_it_supports_metadata() -> None:
    assert cast(SQLQueueBackend, task_backends["default"]).supports_metadata is True


def test_an_enqueues_metadata_is_the_jobs_meta_over_with_meta() -> None:
    task = types.SimpleNamespace(meta={"by": "alice", "trace": 1}, metadata={"trace": 2, "_lib": "x"})
    assert metadata.enqueue_meta(task) == {"by": "alice", "trace": 2, "_lib": "x"}
    assert metadata.enqueue_meta(types.SimpleNamespace(meta=None, metadata={})) is None
    add.with_meta({"by": "bob"}).enqueue(1, 2)
    assert Job.objects.get().meta == {"by": "bob"}


def test_a_result_carries_the_jobs_meta_where_django_has_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metadata, "SUPPORTED", True)
    meta = {"a": 1, "_sqlqueue": 2}
    assert metadata.result_metadata(meta) == {"raw_metadata": meta}
    assert metadata.result_metadata(meta)["raw_metadata"] is not meta
    assert metadata.result_metadata(None) == {"raw_metadata": {}}
    monkeypatch.setattr(metadata, "SUPPORTED", False)
    assert metadata.result_metadata(meta) == {}


@pytest.mark.parametrize("fail", [False, True], ids=["returned", "raised"])
def test_metadata_the_task_changed_is_saved_whether_it_returned_or_raised(
    development_context: None, fail: bool, admin_client: Client
) -> None:
    result = note_metadata.with_meta({"trace": 7, "_sqlqueue_kept": True}).enqueue("step", 3, fail=fail)
    Job.objects.filter(pk=result.id).update(max_attempts=1)
    run_jobs()
    job = Job.objects.get(pk=result.id)
    assert job.status == (JobStatus.FAILED if fail else JobStatus.SUCCESSFUL)
    # Changed and kept, its reserved keys too.
    assert job.meta == {"trace": 7, "_sqlqueue_kept": True, "step": 3}
    page = admin_client.get(f"/admin/django_sqlqueue/job/{job.pk}/change/").content.decode()
    assert "&quot;step&quot;: 3" in page


def test_save_metadata_outside_a_worker_replaces_the_jobs_meta() -> None:
    backend = cast(SQLQueueBackend, task_backends["default"])
    result = add.with_meta({"old": 1}).enqueue(1, 2)
    backend.save_metadata(result, {"new": 2})
    assert Job.objects.get().meta == {"new": 2}
    with pytest.raises(ValueError, match="meta"):
        backend.save_metadata(result, {"bad": "\0"})
    with pytest.raises(TaskResultDoesNotExist):
        backend.save_metadata(dataclasses.replace(result, id="999999"), {})
    assert Job.objects.get().meta == {"new": 2}


def test_a_worker_that_lost_its_job_saves_no_metadata(development_context: None) -> None:
    result = note_metadata.enqueue("step", 1)

    def rescued_before_saving(context: Any) -> None:
        Job.objects.filter(pk=result.id).update(worker="someone else")
        metadata.save_modified(context)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(running, "save_modified", rescued_before_saving)
        run_jobs()
    assert Job.objects.get(pk=result.id).meta == {}


@pytest.mark.skipif(
    not metadata.SUPPORTED, reason="the installed Django has no metadata API (its development version has)"
)
def test_djangos_metadata_api_end_to_end() -> None:
    result = note_metadata.using(metadata={"trace": 1, "_lib": 2}).enqueue("step", 3, fail=True)  # type: ignore[call-arg,unused-ignore]
    assert result.metadata == {"trace": 1}  # type: ignore[attr-defined,unused-ignore]
    Job.objects.filter(pk=result.id).update(max_attempts=1)
    run_jobs()
    result.refresh()
    assert result.status == TaskResultStatus.FAILED
    assert result.metadata == {"trace": 1, "step": 3}  # type: ignore[attr-defined,unused-ignore]
    assert Job.objects.get(pk=result.id).meta == {"trace": 1, "_lib": 2, "step": 3}
