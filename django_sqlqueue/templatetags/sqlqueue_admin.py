"""The filters of the app's admin templates: the same helpers the admin's Python uses,
so a time or a long name reads the same on every page (``{% load sqlqueue_admin %}``)."""

from __future__ import annotations

import datetime

from django import template
from django.utils.safestring import SafeString

from django_sqlqueue.admin import display, times

register = template.Library()


@register.filter
def when(value: datetime.datetime | None) -> SafeString | str:
    """``{{ job.finished_at|when }}``: "3 min ago", the exact time and zone on hover; "-"
    for none (or a variable the context lacks, which templates read as "")."""
    return times.when(value or None)


@register.filter
def clipped(value: object, chars: int) -> SafeString:
    """``{{ group.task|clipped:60 }}``: cut in its middle to about that many characters,
    the whole on hover."""
    return display.clipped(str(value), int(chars))
