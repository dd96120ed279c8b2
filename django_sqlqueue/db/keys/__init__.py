"""The statements of the keys ``rules/keys.py`` derives from a job's arguments: writing
unique jobs past the unique index (``unique``) and admitting jobs under concurrency
limits in the claim (``concurrency``). Imports as ``db/`` does."""
