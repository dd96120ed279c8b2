"""The "enqueue in a view" story: the job is written in the view's own transaction."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from django_sqlqueue.models import Job, JobStatus, Worker
from testproject.demo.forms import AddForm
from testproject.demo.tasks import add, fail
from testproject.demo.workers import runworkers_command


def _workers() -> dict[str, object]:
    """Whether a worker is alive to run the job, and else the command that starts one."""
    return {"workers_alive": Worker.objects.alive().exists(), "runworkers": runworkers_command()}


def enqueue(request: HttpRequest) -> HttpResponse:
    """A form that enqueues a job; the job is visible to workers once this view commits."""
    form = AddForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        with transaction.atomic():
            if form.cleaned_data["fail"]:
                job = Job.objects.enqueue(fail, (f"asked to fail with {form.cleaned_data['a']}",))
            else:
                job = Job.objects.enqueue(add, (form.cleaned_data["a"], form.cleaned_data["b"]))
        return redirect("job", pk=job.pk)
    recent = Job.objects.filter(task__in=[add.__module__ + ".add", "demo.fail"]).order_by("-id")[:10]
    return render(request, "demo/enqueue.html", {"form": form, "recent": recent, **_workers()})


def job_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The job as it is now; the page reloads itself until the job is done."""
    job = get_object_or_404(Job, pk=pk)
    done = job.status in {JobStatus.SUCCESSFUL, JobStatus.FAILED, JobStatus.CANCELLED}
    return render(request, "demo/job.html", {"job": job, "done": done, **_workers()})
