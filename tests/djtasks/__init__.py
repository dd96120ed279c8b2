"""An app of Django Tasks ``@task`` functions, written for no backend in particular: the
tests run them on django-sqlqueue's backend, and on django-tasks-db's to show that
moving from it takes only a settings change."""
