"""Calling user code from the runner (``rules/user_code.py``): what it raises is logged,
naming it, and kept for the caller; the runner's own enqueues are marked."""

from __future__ import annotations

import pytest

from django_sqlqueue.rules.user_code import contained, name_of, runner_enqueueing, runner_enqueues


def test_contained_logs_what_raised_with_its_traceback_and_keeps_the_error(caplog: pytest.LogCaptureFixture) -> None:
    with contained("The hook %s", "app.hook", then="going on") as caught:
        raise LookupError("no request")
    assert isinstance(caught.error, LookupError)
    assert "The hook app.hook raised: going on" in caplog.text
    assert "Traceback" in caplog.text


def test_contained_lets_a_block_that_does_not_raise_be() -> None:
    with contained("The hook", then="going on") as caught:
        pass
    assert caught.error is None


def test_what_is_no_exception_goes_on_up() -> None:
    with pytest.raises(KeyboardInterrupt), contained("The hook", then="going on"):
        raise KeyboardInterrupt


def test_runner_enqueues_marks_the_block_only() -> None:
    assert not runner_enqueueing()
    with runner_enqueues():
        assert runner_enqueueing()
    assert not runner_enqueueing()


def test_a_callable_is_named_by_its_dotted_path() -> None:
    assert name_of(name_of) == "django_sqlqueue.rules.user_code.name_of"
    assert name_of(object()).startswith("<object object")
