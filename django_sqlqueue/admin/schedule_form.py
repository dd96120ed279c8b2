"""The form that adds and edits a recurring job in the admin: it accepts only what a
tick could enqueue, so a saved schedule never fires a job no worker would run.

Each field is checked as ``SQLQUEUE_SCHEDULE`` is (``rules.recurrence``), and the whole
entry as the system checks check settings' entries (``db.recurrence.refusal``): the task
is one registered in this process, its arguments are JSON a job can carry and bind to
the task's function, and its name is not one of ``SQLQUEUE_SCHEDULE``'s."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError

from django_sqlqueue.conf import conf
from django_sqlqueue.db import recurrence
from django_sqlqueue.models import Schedule
from django_sqlqueue.rules.recurrence import (
    cron_expression,
    cronsim_installed,
    every_period,
    parse_entry,
    time_zone,
)
from django_sqlqueue.rules.registry import registered_tasks

T = TypeVar("T")

#: The fields the form edits, in the order the page shows them.
FIELDS = ("key", "task", "cron", "every", "tz", "missed", "args", "kwargs", "queue", "priority", "enabled")


class ScheduleForm(forms.ModelForm):  # type: ignore[type-arg]
    """A recurring job defined in the admin."""

    task = forms.ChoiceField(help_text="A registered task: only these can be scheduled.")

    class Meta:
        model = Schedule
        fields = FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = sorted(task.name for task in registered_tasks())
        current = self.instance.task
        # A task gone from the code is shown as it is, and refused until another is chosen.
        missing = [(current, f"{current} (not registered)")] if current and current not in names else []
        task = self.fields["task"]
        assert isinstance(task, forms.ChoiceField)
        task.choices = [("", "---------"), *missing, *((name, name) for name in names)]
        if self.instance.pk is None:
            self.fields["tz"].initial = settings.TIME_ZONE or "UTC"

    def clean_key(self) -> str:
        key: str = self.cleaned_data["key"]
        try:
            in_settings = key in conf.SQLQUEUE_SCHEDULE
        except ImproperlyConfigured:
            in_settings = False  # the system checks report the setting
        if in_settings:
            raise ValidationError(f"SQLQUEUE_SCHEDULE has an entry named {key!r}: choose another name.")
        return key

    def clean_task(self) -> str:
        task: str = self.cleaned_data["task"]
        if task not in {registered.name for registered in registered_tasks()}:
            raise ValidationError(f"{task!r} is not a registered task: choose one of the list.")
        return task

    def clean_cron(self) -> str:
        cron: str = self.cleaned_data["cron"].strip()
        if cron and not cronsim_installed():
            raise ValidationError('cron needs cronsim: pip install "django-sqlqueue[cron]", or use every.')
        return _valid(cron_expression, cron) if cron else ""

    def clean_every(self) -> float | None:
        every: float | None = self.cleaned_data["every"]
        return None if every is None else _valid(every_period, every).total_seconds()

    def clean_tz(self) -> str:
        return _valid(time_zone, self.cleaned_data["tz"].strip())

    def clean_args(self) -> list[Any]:
        args = self.cleaned_data["args"]
        if args is None:
            return []
        if not isinstance(args, list):
            raise ValidationError('args must be a JSON list, such as [1, "two"].')
        return args

    def clean_kwargs(self) -> dict[str, Any]:
        kwargs = self.cleaned_data["kwargs"]
        if kwargs is None:
            return {}
        if not isinstance(kwargs, dict):
            raise ValidationError('kwargs must be a JSON object, such as {"user_id": 1}.')
        return kwargs

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if self.errors:
            return data
        if bool(data["cron"]) == (data["every"] is not None):
            raise ValidationError("Give exactly one of cron and every.")
        raw = {name: data[name] for name in ("task", "tz", "missed", "args", "kwargs", "enabled")}
        raw.update({"cron": data["cron"]} if data["cron"] else {"every": data["every"]})
        if data["queue"]:
            raw["queue"] = data["queue"]
        if data["priority"] is not None:
            raw["priority"] = data["priority"]
        try:
            entry = parse_entry(data["key"], raw, data["tz"], source="Schedule")
        except ImproperlyConfigured as error:
            raise ValidationError(str(error)) from None
        if refused := recurrence.refusal(entry):
            raise ValidationError(f"Every tick would be refused: {refused.problem}")
        return data


def _valid(parse: Callable[[Any], T], value: Any) -> T:
    """``parse(value)``, its ``ValueError`` as the field's error."""
    try:
        return parse(value)
    except ValueError as error:
        raise ValidationError(str(error)) from None
