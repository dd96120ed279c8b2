from django_sqlqueue import job


# One attempt: a failure waits in the admin at once (by default a job has 3).
@job(max_attempts=1)
def send_receipt(order_id: int) -> str:
    """Mail the receipt of an order (here, pretend to)."""
    if order_id <= 0:
        raise ValueError(f"There is no order {order_id}.")
    return f"Receipt for order {order_id} sent."
