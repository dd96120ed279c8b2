"""The app's own admin pages' frame (``templates/admin/django_sqlqueue/job/page.html``):
breadcrumbs in the markup of the Django version that renders them."""

from __future__ import annotations

import re

import django
import pytest
from django.test import Client

from tests.support.admin_helpers import CHANGELIST

pytestmark = pytest.mark.django_db

#: Django 6.1 turned the breadcrumbs into an ordered list; 5.2 and 6.0 separate links with &rsaquo;.
if django.VERSION >= (6, 1):
    EXPECTED = (
        '<ol class="breadcrumbs">\n<li><a href="/admin/">Home</a></li>\n'
        '<li><a href="/admin/django_sqlqueue/">SQL queue</a></li>\n'
        f'<li><a href="{CHANGELIST}">Jobs</a></li>\n'
        '<li aria-current="page">{title}</li>\n</ol>'
    )
else:
    EXPECTED = (
        '<div class="breadcrumbs">\n<a href="/admin/">Home</a>\n'
        '&rsaquo; <a href="/admin/django_sqlqueue/">SQL queue</a>\n'
        f'&rsaquo; <a href="{CHANGELIST}">Jobs</a>\n'
        "&rsaquo; {title}\n</div>"
    )


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("overview/", "Queue overview"),
        ("failures/", "Failures by task and exception"),
        ("retry-failed/", "Retry failed jobs?"),
    ],
)
def test_breadcrumbs_take_the_django_versions_markup(admin_client: Client, path: str, title: str) -> None:
    page = admin_client.get(CHANGELIST + path).content.decode()
    [breadcrumbs] = re.findall(r'<(?:ol|div) class="breadcrumbs">.*?</(?:ol|div)>', page, re.S)
    assert breadcrumbs == EXPECTED.format(title=title)


def test_the_pages_load_the_apps_stylesheet_and_nothing_of_the_change_form(admin_client: Client) -> None:
    page = admin_client.get(CHANGELIST + "overview/").content.decode()
    assert '<link rel="stylesheet" href="/static/django_sqlqueue/admin.css">' in page
    assert "forms.css" not in page
    assert "jsi18n" not in page
    assert "change-form" not in page
