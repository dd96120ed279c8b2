"""Each peer's side of the comparison, run inside that peer's own virtualenv."""
