"""The settings object (``conf.py``): defaults, overrides and invalid values."""

from __future__ import annotations

import datetime
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from django_sqlqueue import conf as conf_module
from django_sqlqueue.conf import Setting, Settings, conf, setting_names
from django_sqlqueue.rules.embedded import Embedded
from django_sqlqueue.rules.lifecycle import JobStatus

DAY = datetime.timedelta(days=1)

DEFAULTS = {
    "SQLQUEUE_QUEUES": None,
    "SQLQUEUE_DEFAULT_QUEUE": "default",
    "SQLQUEUE_MAX_ATTEMPTS": 3,
    "SQLQUEUE_MAX_SNOOZES": 100,
    "SQLQUEUE_TIMEOUT": None,
    "SQLQUEUE_RETRY_BACKOFF": 10.0,
    "SQLQUEUE_RETRY_BACKOFF_MAX": 3600.0,
    "SQLQUEUE_BATCH_SIZE": 100,
    "SQLQUEUE_HEARTBEAT_INTERVAL": 5.0,
    "SQLQUEUE_LEASE": 60.0,
    "SQLQUEUE_POLL_INTERVAL": 1.0,
    "SQLQUEUE_WAKEUP_DIR": None,
    "SQLQUEUE_SHUTDOWN_GRACE": 30.0,
    "SQLQUEUE_WORKER_START": "fork" if sys.platform.startswith("linux") else "spawn",
    "SQLQUEUE_CANCEL_GRACE": 30.0,
    "SQLQUEUE_RETENTION": {JobStatus.SUCCESSFUL: DAY, JobStatus.CANCELLED: 7 * DAY, JobStatus.FAILED: 30 * DAY},
    "SQLQUEUE_SCHEDULE": {},
    "SQLQUEUE_RATE_LIMITS": {},
    "SQLQUEUE_MIDDLEWARE": (),
    "SQLQUEUE_ENQUEUE_HOOKS": (),
    "SQLQUEUE_ADMIN_REFRESH": 5.0,
    "SQLQUEUE_EMBEDDED": None,
}


def test_every_setting_has_a_property() -> None:
    assert {name for name in dir(conf) if name.startswith("SQLQUEUE_")} == set(DEFAULTS)


@pytest.mark.parametrize(("name", "default"), DEFAULTS.items())
def test_default(settings: Any, name: str, default: Any) -> None:
    delattr(settings, name)
    value = getattr(conf, name)
    assert value == default
    assert type(value) is type(default)


@pytest.mark.parametrize(
    ("overrides", "name", "expected"),
    [
        ({"SQLQUEUE_QUEUES": ["default", "mail", "mail"]}, "SQLQUEUE_QUEUES", frozenset({"default", "mail"})),
        ({"SQLQUEUE_QUEUES": ("default",)}, "SQLQUEUE_QUEUES", frozenset({"default"})),
        ({"SQLQUEUE_QUEUES": None}, "SQLQUEUE_QUEUES", None),
        ({"SQLQUEUE_DEFAULT_QUEUE": "mail"}, "SQLQUEUE_DEFAULT_QUEUE", "mail"),
        ({"SQLQUEUE_DEFAULT_QUEUE": "mail", "SQLQUEUE_QUEUES": ["mail"]}, "SQLQUEUE_DEFAULT_QUEUE", "mail"),
        ({"SQLQUEUE_MAX_ATTEMPTS": 1}, "SQLQUEUE_MAX_ATTEMPTS", 1),
        ({"SQLQUEUE_MAX_ATTEMPTS": 25}, "SQLQUEUE_MAX_ATTEMPTS", 25),
        ({"SQLQUEUE_MAX_SNOOZES": 0}, "SQLQUEUE_MAX_SNOOZES", 0),
        ({"SQLQUEUE_TIMEOUT": 30}, "SQLQUEUE_TIMEOUT", 30.0),
        ({"SQLQUEUE_TIMEOUT": 0.5}, "SQLQUEUE_TIMEOUT", 0.5),
        ({"SQLQUEUE_RETRY_BACKOFF": 2}, "SQLQUEUE_RETRY_BACKOFF", 2.0),
        ({"SQLQUEUE_RETRY_BACKOFF_MAX": 60}, "SQLQUEUE_RETRY_BACKOFF_MAX", 60.0),
        ({"SQLQUEUE_RETRY_BACKOFF": 60, "SQLQUEUE_RETRY_BACKOFF_MAX": 60}, "SQLQUEUE_RETRY_BACKOFF_MAX", 60.0),
        ({"SQLQUEUE_BATCH_SIZE": 1}, "SQLQUEUE_BATCH_SIZE", 1),
        ({"SQLQUEUE_BATCH_SIZE": 5000}, "SQLQUEUE_BATCH_SIZE", 5000),
        ({"SQLQUEUE_HEARTBEAT_INTERVAL": 0.5}, "SQLQUEUE_HEARTBEAT_INTERVAL", 0.5),
        ({"SQLQUEUE_LEASE": 15}, "SQLQUEUE_LEASE", 15.0),
        ({"SQLQUEUE_HEARTBEAT_INTERVAL": 1, "SQLQUEUE_LEASE": 3}, "SQLQUEUE_LEASE", 3.0),
        ({"SQLQUEUE_POLL_INTERVAL": 0.1}, "SQLQUEUE_POLL_INTERVAL", 0.1),
        ({"SQLQUEUE_ADMIN_REFRESH": 2}, "SQLQUEUE_ADMIN_REFRESH", 2.0),
        ({"SQLQUEUE_ADMIN_REFRESH": None}, "SQLQUEUE_ADMIN_REFRESH", None),
        ({"SQLQUEUE_EMBEDDED": {}}, "SQLQUEUE_EMBEDDED", Embedded(queues=None, threads=1)),
        (
            {"SQLQUEUE_EMBEDDED": {"queues": ["mail", "default"], "threads": 4}},
            "SQLQUEUE_EMBEDDED",
            Embedded(queues=("mail", "default"), threads=4),
        ),
        ({"SQLQUEUE_WAKEUP_DIR": "/run/mysite"}, "SQLQUEUE_WAKEUP_DIR", "/run/mysite"),
        ({"SQLQUEUE_WAKEUP_DIR": Path("/run/mysite")}, "SQLQUEUE_WAKEUP_DIR", "/run/mysite"),
        ({"SQLQUEUE_WAKEUP_DIR": False}, "SQLQUEUE_WAKEUP_DIR", False),
        ({"SQLQUEUE_SHUTDOWN_GRACE": 5}, "SQLQUEUE_SHUTDOWN_GRACE", 5.0),
        ({"SQLQUEUE_WORKER_START": "spawn"}, "SQLQUEUE_WORKER_START", "spawn"),
        (
            {"SQLQUEUE_RETENTION": {"SUCCESSFUL": 0, "FAILED": None}},
            "SQLQUEUE_RETENTION",
            {JobStatus.SUCCESSFUL: 0 * DAY, JobStatus.CANCELLED: 7 * DAY, JobStatus.FAILED: None},
        ),
        (
            {"SQLQUEUE_RETENTION": {"CANCELLED": 90.5, "FAILED": 2 * DAY}},
            "SQLQUEUE_RETENTION",
            {
                JobStatus.SUCCESSFUL: DAY,
                JobStatus.CANCELLED: datetime.timedelta(seconds=90.5),
                JobStatus.FAILED: 2 * DAY,
            },
        ),
    ],
)
def test_valid_override(overrides: dict[str, Any], name: str, expected: Any) -> None:
    with override_settings(**overrides):
        value = getattr(conf, name)
    assert value == expected
    assert type(value) is type(expected)


def test_settings_are_read_on_every_access() -> None:
    with override_settings(SQLQUEUE_BATCH_SIZE=7):
        assert conf.SQLQUEUE_BATCH_SIZE == 7
    assert conf.SQLQUEUE_BATCH_SIZE == 100


def test_a_change_made_with_the_settings_fixture_is_read_at_once(settings: Any) -> None:
    assert conf.SQLQUEUE_MAX_ATTEMPTS == 3
    settings.SQLQUEUE_MAX_ATTEMPTS = 5
    assert conf.SQLQUEUE_MAX_ATTEMPTS == 5
    del settings.SQLQUEUE_MAX_ATTEMPTS
    assert conf.SQLQUEUE_MAX_ATTEMPTS == 3


def test_django_settings_are_asked_once_until_a_setting_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []

    class Counted:
        """Django's settings, counting what is asked of them."""

        @property
        def _wrapped(self) -> object:
            return vars(django_settings)["_wrapped"]

        def __getattr__(self, name: str) -> Any:
            asked.append(name)
            return getattr(django_settings, name)

    monkeypatch.setattr(conf_module, "settings", Counted())
    with override_settings():  # settings of its own: nothing read from them yet
        for _ in range(3):
            assert conf.SQLQUEUE_TIMEOUT is None  # left out of the test settings
            assert conf.SQLQUEUE_BATCH_SIZE == 100
        assert asked == ["SQLQUEUE_TIMEOUT", "SQLQUEUE_BATCH_SIZE"]
        with override_settings(SQLQUEUE_TIMEOUT=2):
            assert conf.SQLQUEUE_TIMEOUT == 2.0
        assert conf.SQLQUEUE_TIMEOUT is None


@pytest.mark.parametrize(
    ("overrides", "name", "message"),
    [
        (
            {"SQLQUEUE_QUEUES": "mail"},
            "SQLQUEUE_QUEUES",
            "SQLQUEUE_QUEUES must be a list of queue names or None, not 'mail'.",
        ),
        ({"SQLQUEUE_QUEUES": 3}, "SQLQUEUE_QUEUES", "SQLQUEUE_QUEUES must be a list of queue names or None, not 3."),
        (
            {"SQLQUEUE_QUEUES": []},
            "SQLQUEUE_QUEUES",
            "SQLQUEUE_QUEUES is empty: no job could ever be enqueued. Use None to allow any queue.",
        ),
        (
            {"SQLQUEUE_QUEUES": ["default", ""]},
            "SQLQUEUE_QUEUES",
            "SQLQUEUE_QUEUES: a queue name must be a non-empty string, not ''.",
        ),
        (
            {"SQLQUEUE_QUEUES": [1]},
            "SQLQUEUE_QUEUES",
            "SQLQUEUE_QUEUES: a queue name must be a non-empty string, not 1.",
        ),
        (
            {"SQLQUEUE_QUEUES": ["q" * 101]},
            "SQLQUEUE_QUEUES",
            f"SQLQUEUE_QUEUES: queue name {'q' * 101!r} is longer than 100 characters.",
        ),
        (
            {"SQLQUEUE_DEFAULT_QUEUE": ""},
            "SQLQUEUE_DEFAULT_QUEUE",
            "SQLQUEUE_DEFAULT_QUEUE: a queue name must be a non-empty string, not ''.",
        ),
        (
            {"SQLQUEUE_DEFAULT_QUEUE": None},
            "SQLQUEUE_DEFAULT_QUEUE",
            "SQLQUEUE_DEFAULT_QUEUE: a queue name must be a non-empty string, not None.",
        ),
        (
            {"SQLQUEUE_QUEUES": ["mail", "reports"]},
            "SQLQUEUE_DEFAULT_QUEUE",
            "SQLQUEUE_DEFAULT_QUEUE: queue 'default' is not one of SQLQUEUE_QUEUES ['mail', 'reports'].",
        ),
        (
            {"SQLQUEUE_MAX_ATTEMPTS": 0},
            "SQLQUEUE_MAX_ATTEMPTS",
            "SQLQUEUE_MAX_ATTEMPTS must be an integer of at least 1, not 0.",
        ),
        (
            {"SQLQUEUE_MAX_SNOOZES": -1},
            "SQLQUEUE_MAX_SNOOZES",
            "SQLQUEUE_MAX_SNOOZES must be an integer from 0 to 2147483647, not -1.",
        ),
        (
            {"SQLQUEUE_MAX_ATTEMPTS": 2**31},
            "SQLQUEUE_MAX_ATTEMPTS",
            "SQLQUEUE_MAX_ATTEMPTS must be at most 2147483647, not 2147483648.",
        ),
        (
            {"SQLQUEUE_BATCH_SIZE": 100_001},
            "SQLQUEUE_BATCH_SIZE",
            "SQLQUEUE_BATCH_SIZE must be at most 100000, not 100001.",
        ),
        (
            {"SQLQUEUE_RETENTION": 3600},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION must be a dict of status to seconds, not 3600.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"READY": 60}},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION: 'READY' is not a finished status; use 'SUCCESSFUL', 'CANCELLED', 'FAILED'.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"FAILED": "7d"}},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION['FAILED'] must be seconds, a timedelta or None, not '7d'.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"FAILED": float("nan")}},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION['FAILED'] must be seconds, a timedelta or None, not nan.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"SUCCESSFUL": -1}},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION['SUCCESSFUL'] must be from 0 to 36525 days (None keeps jobs for ever), not -1.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"CANCELLED": float("inf")}},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION['CANCELLED'] must be from 0 to 36525 days (None keeps jobs for ever), not inf.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"CANCELLED": -DAY}},
            "SQLQUEUE_RETENTION",
            "SQLQUEUE_RETENTION['CANCELLED'] must be from 0 to 36525 days (None keeps jobs for ever), "
            "not datetime.timedelta(days=-1).",
        ),
        (
            {"SQLQUEUE_LEASE": 10**400},
            "SQLQUEUE_LEASE",
            f"SQLQUEUE_LEASE must be a positive number of seconds, not {10**400}.",
        ),
        (
            {"SQLQUEUE_MAX_ATTEMPTS": 2.0},
            "SQLQUEUE_MAX_ATTEMPTS",
            "SQLQUEUE_MAX_ATTEMPTS must be an integer of at least 1, not 2.0.",
        ),
        (
            {"SQLQUEUE_MAX_ATTEMPTS": True},
            "SQLQUEUE_MAX_ATTEMPTS",
            "SQLQUEUE_MAX_ATTEMPTS must be an integer of at least 1, not True.",
        ),
        (
            {"SQLQUEUE_TIMEOUT": 0},
            "SQLQUEUE_TIMEOUT",
            "SQLQUEUE_TIMEOUT must be a positive number of seconds, not 0.",
        ),
        (
            {"SQLQUEUE_TIMEOUT": "30"},
            "SQLQUEUE_TIMEOUT",
            "SQLQUEUE_TIMEOUT must be a positive number of seconds, not '30'.",
        ),
        (
            {"SQLQUEUE_RETRY_BACKOFF": -1},
            "SQLQUEUE_RETRY_BACKOFF",
            "SQLQUEUE_RETRY_BACKOFF must be a positive number of seconds, not -1.",
        ),
        (
            {"SQLQUEUE_RETRY_BACKOFF_MAX": 0},
            "SQLQUEUE_RETRY_BACKOFF_MAX",
            "SQLQUEUE_RETRY_BACKOFF_MAX must be a positive number of seconds, not 0.",
        ),
        (
            {"SQLQUEUE_RETRY_BACKOFF_MAX": 5},
            "SQLQUEUE_RETRY_BACKOFF_MAX",
            "SQLQUEUE_RETRY_BACKOFF_MAX must not be smaller than SQLQUEUE_RETRY_BACKOFF.",
        ),
        (
            {"SQLQUEUE_BATCH_SIZE": 0},
            "SQLQUEUE_BATCH_SIZE",
            "SQLQUEUE_BATCH_SIZE must be an integer of at least 1, not 0.",
        ),
        (
            {"SQLQUEUE_BATCH_SIZE": "100"},
            "SQLQUEUE_BATCH_SIZE",
            "SQLQUEUE_BATCH_SIZE must be an integer of at least 1, not '100'.",
        ),
        (
            {"SQLQUEUE_HEARTBEAT_INTERVAL": False},
            "SQLQUEUE_HEARTBEAT_INTERVAL",
            "SQLQUEUE_HEARTBEAT_INTERVAL must be a positive number of seconds, not False.",
        ),
        (
            {"SQLQUEUE_LEASE": 0},
            "SQLQUEUE_LEASE",
            "SQLQUEUE_LEASE must be a positive number of seconds, not 0.",
        ),
        (
            {"SQLQUEUE_LEASE": 14.9},
            "SQLQUEUE_LEASE",
            "SQLQUEUE_LEASE must be at least three SQLQUEUE_HEARTBEAT_INTERVALs.",
        ),
        (
            {"SQLQUEUE_HEARTBEAT_INTERVAL": 30},
            "SQLQUEUE_LEASE",
            "SQLQUEUE_LEASE must be at least three SQLQUEUE_HEARTBEAT_INTERVALs.",
        ),
        (
            {"SQLQUEUE_POLL_INTERVAL": 0},
            "SQLQUEUE_POLL_INTERVAL",
            "SQLQUEUE_POLL_INTERVAL must be a positive number of seconds, not 0.",
        ),
        (
            {"SQLQUEUE_WORKER_START": "forkserver"},
            "SQLQUEUE_WORKER_START",
            "SQLQUEUE_WORKER_START must be 'fork' or 'spawn', not 'forkserver'.",
        ),
        (
            {"SQLQUEUE_ADMIN_REFRESH": 0.5},
            "SQLQUEUE_ADMIN_REFRESH",
            "SQLQUEUE_ADMIN_REFRESH must be at least 1 second, or None, not 0.5.",
        ),
        (
            {"SQLQUEUE_ADMIN_REFRESH": "5"},
            "SQLQUEUE_ADMIN_REFRESH",
            "SQLQUEUE_ADMIN_REFRESH must be a positive number of seconds, not '5'.",
        ),
        (
            {"SQLQUEUE_EMBEDDED": {"threads": 0}},
            "SQLQUEUE_EMBEDDED",
            "SQLQUEUE_EMBEDDED: 'threads' must be an integer from 1 to 32, not 0.",
        ),
        (
            {"SQLQUEUE_EMBEDDED": {"queues": ["mail"]}, "SQLQUEUE_QUEUES": ["default"]},
            "SQLQUEUE_EMBEDDED",
            "SQLQUEUE_EMBEDDED: queue 'mail' is not one of SQLQUEUE_QUEUES ['default'].",
        ),
        (
            {"SQLQUEUE_EMBEDDED": True},
            "SQLQUEUE_EMBEDDED",
            "SQLQUEUE_EMBEDDED: must be None (off) or a dict with 'queues' and 'threads', not True.",
        ),
        (
            {"SQLQUEUE_WAKEUP_DIR": "run/mysite"},
            "SQLQUEUE_WAKEUP_DIR",
            "SQLQUEUE_WAKEUP_DIR must be an absolute path, None (a folder of its own) or False (off), not "
            "'run/mysite'.",
        ),
        (
            {"SQLQUEUE_WAKEUP_DIR": True},
            "SQLQUEUE_WAKEUP_DIR",
            "SQLQUEUE_WAKEUP_DIR must be an absolute path, None (a folder of its own) or False (off), not True.",
        ),
        (
            {"SQLQUEUE_SHUTDOWN_GRACE": -5},
            "SQLQUEUE_SHUTDOWN_GRACE",
            "SQLQUEUE_SHUTDOWN_GRACE must be a positive number of seconds, not -5.",
        ),
    ],
)
def test_invalid_value(overrides: dict[str, Any], name: str, message: str) -> None:
    with override_settings(**overrides), pytest.raises(ImproperlyConfigured) as excinfo:
        getattr(conf, name)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SQLQUEUE_TIMEOUT", float("nan")),
        ("SQLQUEUE_TIMEOUT", float("inf")),
        ("SQLQUEUE_POLL_INTERVAL", float("nan")),
        ("SQLQUEUE_LEASE", float("nan")),
    ],
)
def test_number_settings_refuse_nan_and_infinity(name: str, value: float) -> None:
    """NaN slips past ``value <= 0``; an infinite SQLQUEUE_TIMEOUT passed here, yet every
    enqueue that takes it as its default is then refused by ``job_options_problem``."""
    with override_settings(**{name: value}), pytest.raises(ImproperlyConfigured) as excinfo:
        getattr(conf, name)
    assert str(excinfo.value) == f"{name} must be a positive number of seconds, not {value!r}."


def test_every_setting_the_package_reads_is_a_documented_setting() -> None:
    """The settings reference is generated from ``Settings``: every ``SQLQUEUE_*`` name the
    package mentions is one of its settings, with a docstring, a type and a default of its
    own (the docstring does not repeat the default, which would drift)."""
    package = Path(conf_module.__file__).parent
    named = {
        name
        for path in package.rglob("*.py")
        for name in re.findall(r"\bSQLQUEUE_[A-Z][A-Z0-9_]*", path.read_text(encoding="utf-8"))
    }
    documented = {name: value for name, value in vars(Settings).items() if isinstance(value, Setting)}
    assert named == set(documented)
    for name, setting in documented.items():
        assert setting.__doc__, name
        assert re.search(r"\(default (\d|``None``|none)", setting.__doc__) is None, name
        assert setting.annotation, name


SETTING_NAMES = setting_names()


def plain(name: str) -> Any:
    """``conf``'s value of setting ``name`` with nothing remembered: the plain path."""
    memo, conf_module._memo = conf_module._memo, conf_module._Memo()
    try:
        return getattr(conf, name)
    finally:
        conf_module._memo = memo


@pytest.mark.parametrize("overrides", [{}, {"SQLQUEUE_BATCH_SIZE": 7, "SQLQUEUE_RETENTION": {"FAILED": None}}])
def test_every_setting_read_through_the_memo_equals_a_plain_read(overrides: dict[str, Any]) -> None:
    with override_settings(**overrides):
        remembered = {name: getattr(conf, name) for name in SETTING_NAMES}
        assert {name: getattr(conf, name) for name in SETTING_NAMES} == remembered  # from the memo
        assert remembered == {name: plain(name) for name in SETTING_NAMES}
    assert "SQLQUEUE_BATCH_SIZE" in SETTING_NAMES
    assert len(SETTING_NAMES) >= 15


def test_the_memo_follows_override_settings_and_the_settings_fixture(settings: Any) -> None:
    assert conf.SQLQUEUE_BATCH_SIZE == 100
    with override_settings(SQLQUEUE_BATCH_SIZE=7):
        assert conf.SQLQUEUE_BATCH_SIZE == 7
        with override_settings(SQLQUEUE_BATCH_SIZE=8):
            assert conf.SQLQUEUE_BATCH_SIZE == 8
        assert conf.SQLQUEUE_BATCH_SIZE == 7
    assert conf.SQLQUEUE_BATCH_SIZE == 100
    settings.SQLQUEUE_BATCH_SIZE = 9
    assert conf.SQLQUEUE_BATCH_SIZE == 9
    del settings.SQLQUEUE_BATCH_SIZE
    assert conf.SQLQUEUE_BATCH_SIZE == 100


def test_fork_is_refused_where_the_system_cannot_fork_safely(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    settings.SQLQUEUE_WORKER_START = "fork"
    with pytest.raises(
        ImproperlyConfigured, match="SQLQUEUE_WORKER_START 'fork' is supported on Linux only, not on darwin"
    ):
        assert conf.SQLQUEUE_WORKER_START is None  # never reached: reading it raises
