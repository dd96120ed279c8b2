"""The testing guide's example: a view that enqueues a job, tested without
a worker."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core import mail

from shop.tasks import send_welcome


def test_sign_up_sends_a_welcome_mail(client, sqlqueue):
    client.post("/sign-up/", {"email": "ada@example.com"})
    user = User.objects.get()
    sqlqueue.assert_enqueued(send_welcome, args=[user.pk], queue="mail")
    assert sqlqueue.run_jobs() == sqlqueue.Ran(succeeded=1)
    assert len(mail.outbox) == 1
