"""One module per ``manage.py`` command: each parses and validates its options, then
hands the work to the runtime or to ``db/``."""
