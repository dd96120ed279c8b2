"""Pages that update themselves: the queue overview, the job list and a running job's
page ask their own URL again every ``SQLQUEUE_ADMIN_REFRESH`` seconds while open
(``static/django_sqlqueue/refresh.js``), with the header :data:`HEADER`, and get a
fragment of the same page, whose figures replace the page's in place.

The fragment is the page's own view answering, so it is refused to whom the page is
refused (the admin's login and the view's permissions), and it holds nothing the page
does not. Without JavaScript the page is the same, less the note that says it updates."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.cache import patch_vary_headers

from django_sqlqueue.conf import conf

#: The request header that asks a page for its fragment.
HEADER = "X-SQLQueue-Refresh"


def context(live: bool = True) -> dict[str, Any]:
    """What the page's template needs to update itself (``sqlqueue_refresh``: the
    milliseconds between updates), or to say in its fragment that it no longer does."""
    every = conf.SQLQUEUE_ADMIN_REFRESH
    return {"sqlqueue_refresh": round(every * 1000) if live and every else None}


def wanted(request: HttpRequest) -> bool:
    """Whether ``request`` asks for the fragment rather than the page."""
    return request.method == "GET" and request.headers.get(HEADER) == "1"


def fragment(request: HttpRequest, response: HttpResponse, template: str) -> HttpResponse:
    """``response`` (the page) rendered with ``template`` (its fragment) when the request
    asks for it; a redirect or an error stays as it is."""
    if isinstance(response, TemplateResponse) and not response.is_rendered:
        if wanted(request):
            response.template_name = template
        patch_vary_headers(response, [HEADER])
    return response
