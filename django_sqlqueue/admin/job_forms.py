"""The two pages of the job admin that write jobs from a form: *Edit* (a job no worker
holds: ``Job.objects.edit``) and *Enqueue a job* (``Job.objects.enqueue``), each under
its own permission (``edit_job``, ``enqueue_job``), refused with 403 on GET and POST
alike to whom lacks it, and each recorded in the admin's history under the user's name.

:class:`JobFormPages` is a base of ``jobs.JobAdmin``, which routes to its views."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from django_sqlqueue.admin.edit_form import EditForm, change_message
from django_sqlqueue.admin.enqueue_form import EnqueueForm, TaskForm, task_named
from django_sqlqueue.exceptions import InvalidJobError, UnknownTaskError
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import EDITABLE


def _page(admin: JobFormPages, request: HttpRequest, template: str, title: str, **context: Any) -> TemplateResponse:
    return TemplateResponse(
        request,
        f"admin/django_sqlqueue/job/{template}",
        {**admin.admin_site.each_context(request), "opts": admin.opts, "title": title, **context},
    )


def _job_page(pk: int) -> HttpResponseRedirect:
    return HttpResponseRedirect(reverse("admin:django_sqlqueue_job_change", args=[pk]))


class JobFormPages(admin.ModelAdmin):  # type: ignore[type-arg]
    """The Edit and Enqueue pages of the job admin, and their permissions."""

    def has_edit_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.edit_job")

    def has_enqueue_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("django_sqlqueue.enqueue_job")

    def edit_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """A job's Edit page (:func:`edit_view`)."""
        return edit_view(self, request, object_id)

    def enqueue_view(self, request: HttpRequest) -> HttpResponse:
        """The Enqueue a job page (:func:`enqueue_view`)."""
        return enqueue_view(self, request)


def edit_view(admin: JobFormPages, request: HttpRequest, object_id: str) -> HttpResponse:
    """A job's arguments, queue, priority, run time and most attempts: on GET the form
    as the job is, on POST the edit, then back to the job's page."""
    if not admin.has_edit_permission(request):
        raise PermissionDenied
    job = admin.get_object(request, object_id)
    if job is None:
        raise Http404(f"No job {object_id!r}.")
    # A POST goes on: the edit is refused if the job changed since its page was shown.
    if request.method != "POST" and job.status not in EDITABLE:
        admin.message_user(request, f"Job {job.pk} is {job.get_status_display().lower()}: it cannot be edited.")
        return _job_page(job.pk)
    run_at = job.shown_run_at
    form = EditForm(request.POST) if request.method == "POST" else EditForm.of(job, run_at)
    if request.method == "POST" and form.is_valid():
        edit = form.edit(run_at)
        try:
            before = Job.objects.edit(form.seen(job), edit)
        except (InvalidJobError, UnknownTaskError) as error:
            form.add_error(None, str(error))
        else:
            if before is None:
                now = Job.objects.on_queue_db().filter(pk=job.pk).values_list("status", flat=True).first()
                admin.message_user(
                    request,
                    f"Job {job.pk} changed since the page was shown (it is now {str(now).lower()}): "
                    "nothing was edited. Look at it again before editing it.",
                    messages.ERROR,
                )
                return _job_page(job.pk)
            said = change_message(before, edit)
            admin.log_change(request, before, said)
            admin.message_user(request, f"Job {job.pk}: {said}.", messages.SUCCESS)
            return _job_page(job.pk)
    return _page(admin, request, "edit.html", f"Edit job {job.pk}", form=form, job=job)


def enqueue_view(admin: JobFormPages, request: HttpRequest) -> HttpResponse:
    """Choose a registered task (GET without ``task``), then its form (GET with it), then
    enqueue the job (POST) and open its page."""
    if not admin.has_enqueue_permission(request):
        raise PermissionDenied
    data = request.POST if request.method == "POST" else request.GET
    name = data.get("task", "")
    registered = task_named(name) if name else None
    if registered is None:
        chosen = TaskForm(data if name else None)
        chosen.is_valid()
        return _page(admin, request, "enqueue_task.html", "Enqueue a job", form=chosen)
    form = EnqueueForm(registered, request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            job = Job.objects.enqueue(
                registered.name, form.cleaned_data["args"], form.cleaned_data["kwargs"], **form.options()
            )
        except InvalidJobError as error:
            form.add_error(None, str(error))
        else:
            if not job.created:
                admin.message_user(
                    request,
                    f"Nothing enqueued: job {job.pk} already holds the unique key ({job.unique_key}) of this call.",
                    messages.WARNING,
                )
                return _job_page(job.pk)
            admin.log_addition(request, job, f"Enqueued from the admin on queue {job.queue}")
            admin.message_user(request, f"Enqueued job {job.pk} of {registered.name}.", messages.SUCCESS)
            return _job_page(job.pk)
    return _page(admin, request, "enqueue.html", f"Enqueue a job of {registered.name}", form=form, task=registered)
