"""The forms that enqueue a job from the admin: one to choose a registered task, then
one built from that task's signature, a JSON field per parameter (required when it
has no default; left empty, a parameter takes its default), and the job's queue,
priority and run time, each optional (the task's ``@job`` options and the settings
fill in what is left out, as for any enqueue).

The job is enqueued through ``Job.objects.enqueue``, the path code takes: the same
checks, hooks and signals. A task name the form did not offer (a crafted POST) is
refused before anything is built."""

from __future__ import annotations

import inspect
import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from django_sqlqueue.admin.edit_form import NOT_GIVEN, JSONText, priority_field, run_at_field
from django_sqlqueue.rules.registry import RegisteredTask, registered_tasks

#: The prefix of a parameter's field: a parameter may be named ``queue`` or ``task``.
PARAMETER = "arg_"
_P = inspect.Parameter
#: The kinds of parameters a call may pass by position.
POSITIONAL = (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)


def task_named(name: str) -> RegisteredTask | None:
    """The registered task ``name``, or None for a name no task has."""
    return next((task for task in registered_tasks() if task.name == name), None)


class TaskForm(forms.Form):
    """The first step: which registered task."""

    task = forms.ChoiceField(help_text="A task registered in this process (@job, or Django's @task).")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        task = self.fields["task"]
        assert isinstance(task, forms.ChoiceField)
        task.choices = [("", "---------"), *((name, name) for name in sorted(t.name for t in registered_tasks()))]


class EnqueueForm(forms.Form):
    """The arguments and options of one job of ``registered``."""

    queue = forms.CharField(max_length=255, required=False)
    priority = priority_field(required=False)
    run_at = run_at_field(required=False, label="Run at", help_text="Empty: now. Else not before this time.")

    def __init__(self, registered: RegisteredTask, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registered = registered
        self.parameters = list(registered.signature.parameters.values()) if registered.signature else None
        self.fields["queue"].widget.attrs["placeholder"] = registered.queue or "its default"
        parameters: dict[str, forms.Field] = {}
        if self.parameters is None:  # Python cannot read its signature: the call as a whole
            parameters = {
                f"{PARAMETER}*": JSONText(required=False, label="args", help_text="A JSON list."),
                f"{PARAMETER}**": JSONText(required=False, label="kwargs", help_text="A JSON object."),
            }
        for parameter in self.parameters or ():
            parameters[PARAMETER + parameter.name] = _field(parameter)
        self.fields = {**parameters, **self.fields}

    def clean(self) -> dict[str, Any]:
        data = self.cleaned_data
        if not self.errors:
            try:
                data["args"], data["kwargs"] = self._call()
            except ValidationError as error:
                self.add_error(None, error)
        return data

    def _call(self) -> tuple[list[Any], dict[str, Any]]:
        """The job's ``args`` and ``kwargs`` from the fields: a parameter that may come by
        position does when an ``*args`` value follows it, else by name."""
        data = self.cleaned_data
        if self.parameters is None:
            return _list(data[f"{PARAMETER}*"], "args"), _dict(data[f"{PARAMETER}**"], "kwargs")
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        star = next((p for p in self.parameters if p.kind == _P.VAR_POSITIONAL), None)
        by_position = star is not None and data[PARAMETER + star.name] is not NOT_GIVEN
        skipped = None
        for parameter in self.parameters:
            value = data[PARAMETER + parameter.name]
            if value is NOT_GIVEN:
                skipped = skipped or (parameter.name if parameter.kind in POSITIONAL else None)
            elif parameter.kind == _P.VAR_POSITIONAL or (
                parameter.kind == _P.POSITIONAL_ONLY or (by_position and parameter.kind == _P.POSITIONAL_OR_KEYWORD)
            ):
                if skipped:
                    raise ValidationError(
                        f"{parameter.name} comes by position after {skipped}, which was left empty: give {skipped} too."
                    )
                if parameter.kind == _P.VAR_POSITIONAL:
                    args.extend(_list(value, f"*{parameter.name}"))
                else:
                    args.append(value)
            elif parameter.kind == _P.VAR_KEYWORD:
                kwargs.update(_dict(value, f"**{parameter.name}"))
            else:
                kwargs[parameter.name] = value
        return args, kwargs

    def options(self) -> dict[str, Any]:
        """The options given (the others come from the task and the settings)."""
        data = self.cleaned_data
        return {name: data[name] for name in ("queue", "priority", "run_at") if data[name] not in (None, "")}


def _field(parameter: inspect.Parameter) -> JSONText:
    """The field of one parameter: required without a default; its default, when JSON, shown in it."""
    if parameter.kind == _P.VAR_POSITIONAL:
        return JSONText(required=False, label=f"*{parameter.name}", help_text="A JSON list of more arguments.")
    if parameter.kind == _P.VAR_KEYWORD:
        return JSONText(required=False, label=f"**{parameter.name}", help_text="A JSON object of more arguments.")
    field = JSONText(required=parameter.default is _P.empty, label=parameter.name)
    if parameter.default is not _P.empty:
        try:
            shown = json.dumps(parameter.default, ensure_ascii=False)
        except (TypeError, ValueError):
            shown = repr(parameter.default)
        field.help_text = f"Empty: its default, {shown}."
        field.widget.attrs["placeholder"] = shown
    else:
        field.help_text = "Required: a JSON value."
    return field


def _list(value: Any, name: str) -> list[Any]:
    if value is NOT_GIVEN:
        return []
    if not isinstance(value, list):
        raise ValidationError(f"{name} must be a JSON list, such as [1, 2].")
    return value


def _dict(value: Any, name: str) -> dict[str, Any]:
    if value is NOT_GIVEN:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(f'{name} must be a JSON object, such as {{"user_id": 1}}.')
    return value
