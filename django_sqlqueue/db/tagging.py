"""Jobs' tags in their side table (``JobTag``): written after the jobs they tag, in the
same transaction; read by ``Job.objects.tagged()`` through the ``(tag, job)`` index;
deleted with their jobs by the database's own ``ON DELETE CASCADE``, which
:func:`~django_sqlqueue.db.schema.tag_table.create_tag_table` declares on each database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from django.db.models import Q

if TYPE_CHECKING:
    from django.db.models import Model

    # The table, not the model: the model holds the manager, which calls this module.
    from django_sqlqueue.db.schema.table import AbstractJob

#: The jobs' relation to their tags (``JobTag.job``'s ``related_name``).
TAGS = "tag_rows"


def tag_model(job_model: type[AbstractJob]) -> type[Model]:
    """The side table of ``job_model``'s tags (``JobTag``), found through its relation."""
    return cast("type[Model]", job_model._meta.get_field(TAGS).related_model)


def write_tags(jobs: Sequence[AbstractJob], using: str) -> None:
    """Write the tags (``new_tags``) of the ``jobs`` just inserted (``created``), in one
    multi-row INSERT, in the caller's transaction."""
    model = tag_model(type(jobs[0]))
    rows = [model(job_id=job.pk, tag=tag) for job in jobs if job.created and job.new_tags for tag in job.new_tags]
    if rows:
        model._base_manager.using(using).bulk_create(rows)


def tagged(job_model: type[AbstractJob], tag: str) -> Q:
    """The jobs that have ``tag``: an ``IN`` over the ``(tag, job)`` index of the side
    table, which each database runs as a semi-join without reading the jobs table."""
    return Q(pk__in=tag_model(job_model)._base_manager.filter(tag=tag).values("job_id"))
