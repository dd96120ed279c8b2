"""The backend in a fresh interpreter: what importing a task module does before Django's
apps are ready."""

from __future__ import annotations

import os
import subprocess

from tests.support.workers import ROOT


def test_creating_the_backend_touches_no_model(python: str) -> None:
    # Django creates the backend when a task module is imported, maybe before the apps are ready.
    code = (
        "import sys; from django.conf import settings; settings.INSTALLED_APPS;"
        "import tests.djtasks.tasks as tasks;"
        "from django_sqlqueue.rules.registry import get_task;"
        "print(get_task('tests.djtasks.tasks.add').django_task is tasks.add,"
        " 'django_sqlqueue.models' in sys.modules)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([python, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "True False\n", "")
