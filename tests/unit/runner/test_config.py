"""The one dataclass of ``runworkers``' options (``runner/config.py``): what it refuses,
and the copy each worker process gets."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from django_sqlqueue.runner.config import WorkerOptions

ASKED: dict[str, Any] = {"queues": ["mail"], "threads": 2, "batch_size": 10, "burst": False, "log_level": 20}


@pytest.mark.parametrize(
    ("wrong", "message"),
    [
        ({"processes": 0}, "runworkers options must be at least 1: processes=0."),
        ({"threads": 0, "batch_size": -1}, "runworkers options must be at least 1: threads=0, batch_size=-1."),
        ({"max_jobs": 0}, "runworkers options must be at least 1: max_jobs=0."),
        ({"max_jobs_per_process": 0, "max_memory": 0}, "at least 1: max_jobs_per_process=0, max_memory=0."),
        ({"log_format": "xml"}, "log_format='xml' is none of ('text', 'json')."),
    ],
)
def test_values_no_run_could_use_are_refused(wrong: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:  # noqa: PT011  # the message is asserted whole below
        WorkerOptions(**{**ASKED, **wrong})
    assert str(raised.value).endswith(message)


def test_each_process_gets_a_copy_with_its_own_name_that_survives_the_spawn() -> None:
    options = WorkerOptions(**ASKED, processes=3, max_jobs=5, name_prefix="deploy")
    copy = options.for_process("deploy:host:1:1")
    assert (options.name, copy.name) == ("", "deploy:host:1:1")
    assert {**vars(copy), "name": ""} == vars(options)
    assert pickle.loads(pickle.dumps(copy)) == copy
