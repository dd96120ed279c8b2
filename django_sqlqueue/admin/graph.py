"""A workflow drawn on its pages: a job's page draws the jobs linked to it, a batch's page
its jobs, each a box with its status (colour and word), linked to its page; laid out by
``graph_layout``, drawn here as an inline SVG, with no script and nothing fetched.

A bounded number of queries, whatever the workflow: a batch's jobs are one query (up to
:data:`MOST_JOBS`), and their links one per thousand jobs; a job's workflow is found
one step of links at a time in both directions (two queries a step, per thousand jobs
of that step), for up to :data:`STEPS` steps or :data:`MOST_JOBS` jobs, then their
statuses, a query per thousand. The drawing says what it left out."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from django.db.models import Q
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe

from django_sqlqueue.admin import display
from django_sqlqueue.admin.graph_layout import BOX_HEIGHT, BOX_WIDTH, Box, JobNode, Layout, layout
from django_sqlqueue.db.dependencies import chunks
from django_sqlqueue.models import Job, JobDependency
from django_sqlqueue.rules.lifecycle import JobStatus

#: The most jobs read for one drawing.
MOST_JOBS = 1000
#: The most steps of links followed from a job to find its workflow.
STEPS = 30
#: The most ids a group's link to the job list carries (its first ones).
LINKED_IDS = 200
#: The characters of a task's name a box shows (the whole on hover).
TASK_CHARS = 24


@dataclass
class Workflow:
    """Jobs and links read for a drawing, and whether there were more than were read."""

    jobs: dict[int, JobNode] = field(default_factory=dict)
    links: set[tuple[int, int]] = field(default_factory=set)
    more: bool = False


def batch_workflow(batch: int) -> Workflow:
    """The jobs of ``batch`` (its first :data:`MOST_JOBS`) and the links between them."""
    rows = list(Job.objects.filter(batch_id=batch).order_by("pk").values_list("pk", "task", "status")[: MOST_JOBS + 1])
    found = Workflow({pk: JobNode(task, status) for pk, task, status in rows[:MOST_JOBS]}, more=len(rows) > MOST_JOBS)
    for chunk in chunks(found.jobs):
        found.links.update(JobDependency.objects.filter(child_id__in=chunk).values_list("parent_id", "child_id"))
    return found


def job_workflow(job: Job) -> Workflow:
    """The jobs linked to ``job``, near or far (up to :data:`STEPS` links away and
    :data:`MOST_JOBS` of them), and their links; none when it has no link."""
    found = Workflow()
    seen, frontier = {job.pk}, {job.pk}
    for _ in range(STEPS):
        step: set[tuple[int, int]] = set()
        for chunk in chunks(frontier):
            step.update(_links(Q(child_id__in=chunk)))
            # Read by the (settled, parent) index: the links' only index led by the parent.
            step.update(_links(Q(settled__in=[False, True], parent_id__in=chunk)))
        found.links |= step
        frontier = {end for link in step for end in link} - seen
        if len(seen) + len(frontier) > MOST_JOBS:
            frontier = set(sorted(frontier)[: MOST_JOBS - len(seen)])
            found.more = True
        seen |= frontier
        if not frontier:
            break
    else:
        found.more = found.more or bool(frontier)
    if len(seen) == 1:
        return Workflow()
    for chunk in chunks(seen):
        for pk, task, status in Job.objects.filter(pk__in=chunk).values_list("pk", "task", "status"):
            found.jobs[pk] = JobNode(task, status)
    found.jobs.update({pk: JobNode("", None) for pk in seen - found.jobs.keys()})
    return found


def _links(where: Q) -> Iterable[tuple[int, int]]:
    return JobDependency.objects.filter(where).values_list("parent_id", "child_id")


def drawing(found: Workflow, *, focus: int | None = None, group_url: Callable[[Box], str]) -> SafeString | str:
    """``found`` as an SVG with its legend and what it left out; "-" for no jobs.
    ``group_url`` gives a group's link to the job list."""
    if not found.jobs:
        return "-"
    drawn = layout(found.jobs, found.links, focus)
    return format_html(
        '<div class="sqlqueue-graph">'
        '<svg viewBox="0 0 {} {}" width="{}" height="{}" role="group" aria-label="{}">{}{}</svg>'
        '<p class="sqlqueue-graph-legend">{} {}</p></div>',
        drawn.width,
        drawn.height,
        drawn.width,
        drawn.height,
        f"Workflow of {len(found.jobs)} jobs, each waiting for those above it it is linked to",
        format_html_join(
            "",
            '<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888" stroke-width="1.5"></line>',
            ((line.x1, line.y1, line.x2, line.y2) for line in drawn.lines),
        ),
        format_html_join("", "{}", ((_box(box, box.ids == [focus], group_url),) for box in drawn.boxes)),
        _legend({box.status for box in drawn.boxes}),
        _left_out(found, drawn),
    )


def _box(box: Box, focus: bool, group_url: Callable[[Box], str]) -> SafeString:
    """One box: a link to the job's page, or for a group to the job list of its jobs."""
    status = JobStatus(box.status).label if box.status in JobStatus.values else "deleted"
    if box.grouped:
        title = f"{len(box.ids)} jobs" + (f" of {box.task}" if box.task else " of several tasks") + f", {status}"
        first = _cut(f"{len(box.ids)} \N{MULTIPLICATION SIGN} ", box.task or "several tasks")
        url = group_url(box)
    else:
        title = f"Job #{box.ids[0]} {box.task}, {status}" + (" (this job)" if focus else "")
        first = _cut(f"#{box.ids[0]} ", box.task or "")
        url = reverse("admin:django_sqlqueue_job_change", args=[box.ids[0]])
    return format_html(
        '<a href="{}" aria-label="{}"><title>{}</title>'
        '<rect x="{}" y="{}" width="{}" height="{}" rx="4" fill="{}"{}></rect>'
        '<text x="{}" y="{}" fill="#fff" font-size="11" font-weight="bold">{}</text>'
        '<text x="{}" y="{}" fill="#fff" font-size="11">{}</text></a>',
        url,
        title,
        title,
        box.x,
        box.y,
        BOX_WIDTH,
        BOX_HEIGHT,
        display.STATUS_COLOURS.get(box.status or "", "#000"),
        mark_safe(' class="sqlqueue-graph-focus" stroke="#000" stroke-width="3"') if focus else "",
        box.x + 6,
        box.y + 15,
        first,
        box.x + 6,
        box.y + 31,
        status,
    )


def _cut(prefix: str, task: str) -> str:
    """``prefix`` and ``task``, the task cut at its start to what a box holds: its
    function's name, at the end, is what tells it apart."""
    room = max(TASK_CHARS - len(prefix), 4)
    return prefix + (task if len(task) <= room else "…" + task[-(room - 1) :])


def _legend(statuses: Collection[str | None]) -> SafeString:
    """The colours of the statuses drawn, each with its word; what a group and the thick outline mean."""
    shown = [status for status in (*JobStatus.values, None) if status in statuses]
    return format_html(
        "{} A box with a count stands for that many jobs of one task and status (a layer too wide to draw"
        " job by job); it links to their list. Each line joins a job (above) to one that waits for it.",
        format_html_join(
            " ", "{}", ((display.status_badge(status) if status else format_html("{}", "deleted"),) for status in shown)
        ),
    )


def _left_out(found: Workflow, drawn: Layout) -> SafeString | str:
    parts = []
    if found.more:
        parts.append(f"Only the {len(found.jobs)} jobs nearest are drawn: the workflow has more.")
    if drawn.jobs_left_out:
        parts.append(f"{drawn.jobs_left_out} jobs of its farthest layers are not drawn.")
    if drawn.lines_left_out:
        parts.append(f"{drawn.lines_left_out} lines are not drawn.")
    return format_html_join(" ", "<strong>{}</strong>", ((part,) for part in parts))


def ids_url(box: Box) -> str:
    """The job list of a group's jobs, by id (its first :data:`LINKED_IDS`)."""
    ids = ",".join(str(pk) for pk in sorted(box.ids)[:LINKED_IDS])
    return f"{reverse('admin:django_sqlqueue_job_changelist')}?{urlencode({'id__in': ids})}"


def batch_url(batch: int) -> Callable[[Box], str]:
    """The job list of a group's jobs in ``batch``: its task (when it has one) and status."""

    def url(box: Box) -> str:
        query: dict[str, str | int] = {"batch_id": batch, **({"task": box.task} if box.task else {})}
        if box.status:
            query["status__exact"] = box.status
        return f"{reverse('admin:django_sqlqueue_job_changelist')}?{urlencode(query)}"

    return url
