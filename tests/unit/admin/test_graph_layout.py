"""Where a workflow's jobs go in its drawing (``admin/graph_layout.py``): layers by the
longest path, wide layers grouped, deep workflows cut, the size bounded."""

from __future__ import annotations

from django_sqlqueue.admin.graph_layout import BOX_HEIGHT, DEEP, MOST_LINES, WIDE, JobNode, layers, layout


def nodes(*ids: int, task: str = "t", status: str = "READY") -> dict[int, JobNode]:
    return {pk: JobNode(task, status) for pk in ids}


def test_a_chain_takes_a_layer_a_job() -> None:
    assert layers([1, 2, 3], [(1, 2), (2, 3)]) == {1: 0, 2: 1, 3: 2}
    drawn = layout(nodes(1, 2, 3), [(1, 2), (2, 3)])
    assert [box.y for box in drawn.boxes] == sorted({box.y for box in drawn.boxes})
    assert len(drawn.lines) == 2
    assert all(line.y2 > line.y1 for line in drawn.lines)


def test_a_diamond_puts_the_join_below_its_longest_path() -> None:
    # 1 -> 2 -> 3 -> 4 and 1 -> 4: 4 waits for 3, so it sits below it, not beside 2.
    links = [(1, 2), (2, 3), (3, 4), (1, 4)]
    assert layers([1, 2, 3, 4], links) == {1: 0, 2: 1, 3: 2, 4: 3}
    assert layers([1, 2, 3, 4], [(1, 2), (1, 3), (2, 4), (3, 4)]) == {1: 0, 2: 1, 3: 1, 4: 2}


def test_links_to_jobs_not_read_are_ignored() -> None:
    assert layers([1, 2], [(1, 2), (5, 2), (2, 9)]) == {1: 0, 2: 1}
    assert len(layout(nodes(1, 2), [(1, 2), (5, 2)]).lines) == 1


def test_a_wide_fan_is_grouped_by_task_and_status_with_the_focus_on_its_own() -> None:
    fan = {1: JobNode("root", "SUCCESSFUL")}
    fan |= {pk: JobNode("leaf", "FAILED" if pk % 2 else "READY") for pk in range(2, 502)}
    links = [(1, pk) for pk in range(2, 502)]
    drawn = layout(fan, links, focus=7)
    second = [box for box in drawn.boxes if box.layer == 1]
    assert [(box.ids, box.grouped) for box in second if box.ids == [7]] == [([7], False)]
    groups = {(box.task, box.status): len(box.ids) for box in second if box.grouped}
    assert groups == {("leaf", "READY"): 250, ("leaf", "FAILED"): 249}
    assert len(drawn.lines) == 3


def test_a_layer_of_many_tasks_is_grouped_by_status_alone() -> None:
    jobs = {1: JobNode("root", "SUCCESSFUL")} | {pk: JobNode(f"task{pk}", "READY") for pk in range(2, 30)}
    drawn = layout(jobs, [(1, pk) for pk in range(2, 30)])
    (group,) = [box for box in drawn.boxes if box.layer == 1]
    assert (group.task, group.status, len(group.ids), group.grouped) == (None, "READY", 28, True)


def test_no_layer_is_wider_than_the_limit() -> None:
    jobs = {pk: JobNode(f"t{pk % 9}", ("READY", "FAILED", "WAITING")[pk % 3]) for pk in range(1000)}
    links = [(pk, pk + 1 + (pk * 7) % 40) for pk in range(1000) if pk + 1 + (pk * 7) % 40 < 1000]
    drawn = layout(jobs, links, focus=500)
    for layer in {box.layer for box in drawn.boxes}:
        assert len([box for box in drawn.boxes if box.layer == layer]) <= WIDE + 1


def test_a_long_chain_keeps_the_layers_around_the_focus_and_says_what_it_left_out() -> None:
    chain = [(pk, pk + 1) for pk in range(1, 1000)]
    drawn = layout(nodes(*range(1, 1001)), chain, focus=600)
    drawn_ids = sorted(pk for box in drawn.boxes for pk in box.ids)
    assert len(drawn_ids) == DEEP
    assert 600 in drawn_ids
    assert drawn.jobs_left_out == 1000 - DEEP
    assert drawn.height <= DEEP * (BOX_HEIGHT + 40)
    top = layout(nodes(*range(1, 1001)), chain)
    assert sorted(pk for box in top.boxes for pk in box.ids) == list(range(1, DEEP + 1))


def test_lines_are_capped() -> None:
    # Two full layers of distinct tasks, each job linked to each: more lines than the cap.
    jobs = {pk: JobNode(f"t{pk}", "READY") for pk in range(12)}
    links = [(a, b) for a in range(6) for b in range(6, 12)]
    drawn = layout(jobs, links)
    assert len(drawn.lines) == 36 <= MOST_LINES
    assert drawn.lines_left_out == 0


def test_a_box_waits_under_its_parents() -> None:
    # 1 and 2 on top; 3 waits for 2 only: it is placed under 2, not under 1.
    drawn = layout(nodes(1, 2, 3, 4), [(2, 3), (1, 4)])
    x = {box.ids[0]: box.x for box in drawn.boxes}
    assert x[3] == x[2]
    assert x[4] == x[1]


def test_nothing_to_draw() -> None:
    drawn = layout({}, [])
    assert (drawn.boxes, drawn.lines, drawn.width, drawn.height) == ([], [], 0, 0)
