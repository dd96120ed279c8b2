from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST
from django_sqlqueue.models import Job

from shop.tasks import send_receipt


@require_POST
@transaction.atomic
def checkout(request: HttpRequest) -> JsonResponse:
    order_id = int(request.POST["order_id"])
    # Save the order here: the job is written in the same transaction, so it is
    # rolled back with the order, and workers see it only once this commits.
    job = Job.objects.enqueue(send_receipt, args=(order_id,))
    return JsonResponse({"job": job.pk, "status": job.status})
