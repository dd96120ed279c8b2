"""The Django settings the documentation is built with: autodoc imports the models, which
need Django set up, and the directives load the commands. An in-memory SQLite database is
never opened; the app is installed as a project installs it."""

from __future__ import annotations

SECRET_KEY = "docs-only"  # never serves a request
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "django_sqlqueue"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
