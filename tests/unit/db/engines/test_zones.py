"""A time zone's UTC offset as SQL (``db/engines/zones.py``), for the clocks of the
databases that store wall-clock times."""

from __future__ import annotations

from django_sqlqueue.db.engines.zones import local_clock


def test_a_zone_with_daylight_saving_time_follows_its_changes() -> None:
    """A connection's statements are kept while it lives: its clock carries the zone's
    changes of offset rather than the offset of the day it was made."""
    sql = local_clock("Europe/Paris", "now", "'%s'", "%s")
    assert sql.startswith("CASE WHEN now < '")
    # Winter then summer time, each year from last year on.
    assert sql.count(" THEN 3600 ") == sql.count(" THEN 7200 ") >= 10
    assert local_clock("Asia/Tokyo", "now", "'%s'", "%s") == "32400"
    assert local_clock("UTC", "now", "'%s'", "%s") == ""
