"""A view that enqueues a job, as a project's would: the tests of the testing helpers
test it the way the README shows."""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from django_sqlqueue.models import Job
from tests.testapp.models import Receipt
from tests.testapp.tasks import send_welcome


@require_POST
def sign_up(request: HttpRequest) -> HttpResponse:
    """Records the sign-up and, in the same transaction, the welcome mail to send."""
    with transaction.atomic():
        receipt = Receipt.objects.create(token=request.POST["email"])
        Job.objects.enqueue(send_welcome, [receipt.pk], {"greeting": "Welcome"})
    return HttpResponse(status=201)
