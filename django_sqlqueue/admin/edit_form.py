"""The form that edits a job no worker holds (``Job.objects.edit``): its arguments as
JSON, its queue, priority, run time and most attempts; and the admin log's words for
what an edit changed.

The form parses; the manager checks the edit as an enqueue would (the arguments bound
to the task's function, JSON every database stores, options in range) and writes it
only while the job is as the page showed it: the status and attempt count it had then
travel with the form, hidden."""

from __future__ import annotations

import datetime
import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils import timezone

from django_sqlqueue.db.editing import Edit
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.rules.limits import MAX_ATTEMPTS, MAX_PRIORITY, MIN_PRIORITY

#: The characters of an old or a new value the admin log keeps: arguments may be long,
#: and may carry what should not be copied whole into the log.
LOGGED_CHARS = 80
#: How a run time is written in the form (``<input type="datetime-local">``'s format).
RUN_AT_FORMAT = "%Y-%m-%dT%H:%M:%S"


class NotGiven:
    """A JSON field left empty (``null`` is a value: None)."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN = NotGiven()


class JSONText(forms.CharField):
    """A JSON value typed into a text area: :data:`NOT_GIVEN` when left empty, so that
    ``null``, ``[]`` and ``""`` are values like any other."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": 2, "cols": 60, "class": "sqlqueue-json"}))
        super().__init__(strip=True, **kwargs)

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if not text:
            return NOT_GIVEN
        try:
            return json.loads(text)
        except ValueError as error:
            raise ValidationError(f"This is not JSON: {error}.", code="invalid") from None

    def validate(self, value: Any) -> None:
        if value is NOT_GIVEN and self.required:
            raise ValidationError(self.error_messages["required"], code="required")


def run_at_field(**kwargs: Any) -> forms.DateTimeField:
    """A run time, picked with the browser's own control, in the current time zone."""
    widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}, format=RUN_AT_FORMAT)
    return forms.DateTimeField(widget=widget, **kwargs)


def priority_field(**kwargs: Any) -> forms.IntegerField:
    return forms.IntegerField(min_value=MIN_PRIORITY, max_value=MAX_PRIORITY, **kwargs)


class EditForm(forms.Form):
    """A job's arguments and options, as :class:`~django_sqlqueue.db.editing.Edit` holds them."""

    args = JSONText(help_text='A JSON list, such as [1, "two"].')
    kwargs = JSONText(help_text='A JSON object, such as {"user_id": 1}.')
    queue = forms.CharField(max_length=255)
    priority = priority_field(help_text=f"From {MIN_PRIORITY} to {MAX_PRIORITY}; higher runs first.")
    run_at = run_at_field(label="Run at", help_text="Not before this time (the current time zone).")
    max_attempts = forms.IntegerField(min_value=1, max_value=MAX_ATTEMPTS, label="Most attempts")
    # The job as the page showed it: the edit is written only while it still is.
    status = forms.ChoiceField(choices=JobStatus.choices, widget=forms.HiddenInput)
    attempts = forms.IntegerField(min_value=0, widget=forms.HiddenInput)

    @classmethod
    def of(cls, job: Job, run_at: Any) -> EditForm:
        """The form for ``job`` as it is (``run_at`` as the admin reads it)."""
        return cls(
            initial={
                "args": json.dumps(job.args, ensure_ascii=False),
                "kwargs": json.dumps(job.kwargs, ensure_ascii=False),
                "queue": job.queue,
                "priority": job.priority,
                "run_at": timezone.localtime(run_at) if timezone.is_aware(run_at) else run_at,
                "max_attempts": job.max_attempts,
                "status": job.status,
                "attempts": job.attempts,
            }
        )

    def clean_args(self) -> list[Any]:
        args = self.cleaned_data["args"]
        if not isinstance(args, list):
            raise ValidationError('args must be a JSON list, such as [1, "two"].')
        return args

    def clean_kwargs(self) -> dict[str, Any]:
        kwargs = self.cleaned_data["kwargs"]
        if not isinstance(kwargs, dict):
            raise ValidationError('kwargs must be a JSON object, such as {"user_id": 1}.')
        return kwargs

    def edit(self, run_at: datetime.datetime) -> Edit:
        """The edit the valid form asks for, of a job that runs at ``run_at``: the form
        shows whole seconds, so a run time left as shown keeps its fraction."""
        data = self.cleaned_data
        return Edit(
            args=data["args"],
            kwargs=data["kwargs"],
            queue=data["queue"],
            priority=data["priority"],
            run_at=run_at if data["run_at"] == run_at.replace(microsecond=0) else data["run_at"],
            max_attempts=data["max_attempts"],
        )

    def seen(self, job: Job) -> Job:
        """``job`` with the status and attempt count the page showed."""
        job.status, job.attempts = self.cleaned_data["status"], self.cleaned_data["attempts"]
        return job


def change_message(before: Job, edit: Edit) -> str:
    """What ``edit`` changed of the job ``before`` it, old → new, each value cut to
    :data:`LOGGED_CHARS`; "Edited: nothing changed" for an edit that changed nothing."""
    changed = [
        f"{name} {_logged(getattr(before, name))} → {_logged(new)}"
        for name, new in vars(edit).items()
        if getattr(before, name) != new
    ]
    return f"Edited: {'; '.join(changed) or 'nothing changed'}"


def _logged(value: Any) -> str:
    text = value.isoformat() if hasattr(value, "isoformat") else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= LOGGED_CHARS else f"{text[: LOGGED_CHARS - 1]}…"
