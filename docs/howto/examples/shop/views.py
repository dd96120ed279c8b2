"""The shop's sign-up view: it enqueues the welcome mail in its transaction."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.http import HttpRequest, HttpResponse

from django_sqlqueue.models import Job
from shop.tasks import send_welcome


@transaction.atomic
def sign_up(request: HttpRequest) -> HttpResponse:
    email = request.POST["email"]
    user = User.objects.create_user(username=email, email=email)
    Job.objects.enqueue(send_welcome, args=(user.pk,))
    # Rolled back with the user; workers see the job only once this commits.
    return HttpResponse(status=201)
