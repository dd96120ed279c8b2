"""due-work-harness's proofs (a conformance suite we did not write) bound to the queue:
the worker killed after each commit and each external call, its signal receivers
failing, the replies to its commits lost, a stale worker's writes fenced off; through
Django's Tasks API and through ``Job.objects.enqueue``, in process and against a real
``runworkers``."""
