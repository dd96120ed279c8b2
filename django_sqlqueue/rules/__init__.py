"""Pure rules of the queue, with no queries: what a job may hold and what it may become,
the columns' sizes (``limits``), which queues may be used (``queues``), how keys, rates
and schedules are read, and the registry of tasks.

Modules here import the standard library, Django's utilities, each other, and the
root's settings (``conf``) and exceptions; never ``db/``, ``runner/``, ``admin/``,
``management/`` or the models (``lint-imports`` checks it)."""
