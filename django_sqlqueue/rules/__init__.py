"""Pure rules of the queue, with no queries: what a job may hold and what it may become.

Modules here import only the standard library, Django's utilities and each other; never
``db/``, ``runner/``, ``admin/``, ``management/`` or the models."""
