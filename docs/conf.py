"""Sphinx configuration for the django-sqlqueue documentation (MyST Markdown, Furo).

Built by ``tox -e docs`` with warnings as errors and nitpicky cross-references, so a broken
link or a renamed function fails CI."""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path[:0] = [str(DOCS.parent), str(DOCS / "_ext")]

project = "django-sqlqueue"
author = "django-sqlqueue contributors"
copyright = "django-sqlqueue contributors"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinxcontrib.mermaid",
    # An example's excerpt shows the imports it uses (docs/_ext/excerpt_imports.py).
    "excerpt_imports",
]
myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3
source_suffix = {".md": "markdown"}
exclude_patterns = ["_build", "**/project/**", "**/examples/**"]

nitpicky = True
# No intersphinx: CI machines may have no route to docs.python.org or djangoproject.com.
# References to Python's and Django's own objects are written as plain text or links;
# those autodoc writes itself (a base class of Django's) have no target here.
nitpick_ignore = [("py:class", "django.db.utils.DatabaseError")]

html_theme = "furo"
html_title = "django-sqlqueue"

# The versions each page was tested with, from the one place that says: tox.ini's env_list.
from tested_with import combinations, sentence  # noqa: E402 (docs/_ext is on sys.path above)

TESTED_WITH = sentence(combinations(DOCS.parent / "tox.ini"))
myst_substitutions = {"tested_with": TESTED_WITH}
# ... and at the foot of every page (docs/_templates/page.html).
templates_path = ["_templates"]
html_context = {"tested_with": TESTED_WITH}

# The generated reference (docs/reference/): autodoc imports the models, so Django is set
# up with settings of the docs' own; docs/_ext/sqlqueue_reference.py writes the settings,
# commands and checks pages from the code.
import os  # noqa: E402

import django  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "docs_settings")
django.setup()
extensions.append("sqlqueue_reference")
autodoc_member_order = "bysource"
# Signatures without annotations: the docstrings say what each argument takes, and
# without intersphinx an annotation naming Django's or a private type has no target.
autodoc_typehints = "none"
