"""Where a workflow's jobs go in its drawing: pure arithmetic over the jobs and their
links, no query (``graph`` reads them and draws the result).

Each job sits in a layer, the length of the longest path of links from a job that
waits for nothing (a root) down to it, so every link points down. A layer wider than
:data:`WIDE` is collapsed: its jobs are grouped into one box per task and status (per
status alone when that is still too wide), which says how many jobs it stands for; the
job whose page it is keeps a box of its own. Boxes are ordered in their layer by the
mean position of the boxes above that they wait for, which keeps most links short.
Past :data:`DEEP` layers the drawing keeps those nearest the job (or the first) and
says how many jobs it left out, so that the drawing's size is bounded whatever the
workflow's."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

#: The most boxes a layer shows before its jobs are grouped (one more for the page's own job).
WIDE = 6
#: The most layers drawn.
DEEP = 40
#: The most lines drawn between boxes; past it the drawing says how many it left out.
MOST_LINES = 600

#: A box's size and the gaps between boxes and layers, in the drawing's units (pixels at full size).
BOX_WIDTH = 176
BOX_HEIGHT = 38
GAP_X = 14
GAP_Y = 34
MARGIN = 4


@dataclass(frozen=True)
class JobNode:
    """What the drawing shows of one job: its task and status (``None`` for a job
    linked but no longer in the table)."""

    task: str
    status: str | None


@dataclass
class Box:
    """One box of the drawing: a job, or a group of jobs of one task (``task`` is
    ``None`` for a group of several tasks) and status."""

    ids: list[int]
    task: str | None
    status: str | None
    layer: int
    x: int = 0
    y: int = 0
    #: Where its links from above land, for the ordering of the layer.
    order: float = 0.0

    @property
    def grouped(self) -> bool:
        """Whether it stands for a group rather than one job."""
        return len(self.ids) != 1 or self.task is None

    @property
    def centre_x(self) -> int:
        return self.x + BOX_WIDTH // 2


@dataclass(frozen=True)
class Line:
    """A link drawn from the bottom of one box to the top of another."""

    x1: int
    y1: int
    x2: int
    y2: int


@dataclass
class Layout:
    """The boxes and lines of a drawing, its size, and what it left out."""

    boxes: list[Box] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)
    width: int = 0
    height: int = 0
    #: The jobs of the layers not drawn.
    jobs_left_out: int = 0
    lines_left_out: int = 0


def layers(jobs: Iterable[int], links: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Each of ``jobs``' layer: the longest path to it, along ``links`` (``(parent,
    child)`` pairs; those with an end outside ``jobs`` are ignored), from a job that
    waits for none of them. A cycle, which links never make, would put its jobs in layer 0."""
    known = set(jobs)
    children: dict[int, list[int]] = defaultdict(list)
    waiting: dict[int, int] = dict.fromkeys(known, 0)
    for parent, child in set(links):
        if parent in known and child in known and parent != child:
            children[parent].append(child)
            waiting[child] += 1
    layer = dict.fromkeys(known, 0)
    ready = [job for job in sorted(known) if waiting[job] == 0]
    while ready:
        job = ready.pop()
        for child in children[job]:
            layer[child] = max(layer[child], layer[job] + 1)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
    return layer


def layout(jobs: Mapping[int, JobNode], links: Iterable[tuple[int, int]], focus: int | None = None) -> Layout:
    """The drawing of ``jobs`` and their ``links`` (``(parent, child)`` pairs), the job
    ``focus`` (whose page it is) in a box of its own and its layers kept."""
    links = [(parent, child) for parent, child in set(links) if parent in jobs and child in jobs]
    layer_of = layers(jobs, links)
    by_layer: dict[int, list[int]] = defaultdict(list)
    for job in sorted(jobs):
        by_layer[layer_of[job]].append(job)
    drawn = _kept_layers(sorted(by_layer), layer_of.get(focus) if focus is not None else None)
    result = Layout(jobs_left_out=sum(len(by_layer[layer]) for layer in by_layer if layer not in drawn))
    parents: dict[int, list[int]] = defaultdict(list)
    for parent, child in links:
        parents[child].append(parent)
    box_of: dict[int, Box] = {}
    for row, layer in enumerate(drawn):
        boxes = _boxes(by_layer[layer], jobs, layer, focus)
        for box in boxes:
            above = [box_of[parent].x for job in box.ids for parent in parents[job] if parent in box_of]
            box.order = sum(above) / len(above) if above else float("inf")
        boxes.sort(key=lambda box: (box.order, box.task or "", box.status or "", box.ids[0]))
        for column, box in enumerate(boxes):
            box.x = MARGIN + column * (BOX_WIDTH + GAP_X)
            box.y = MARGIN + row * (BOX_HEIGHT + GAP_Y)
            box_of.update(dict.fromkeys(box.ids, box))
        result.boxes += boxes
    lines = sorted(
        {
            Line(box_of[parent].centre_x, box_of[parent].y + BOX_HEIGHT, box_of[child].centre_x, box_of[child].y)
            for parent, child in links
            if parent in box_of and child in box_of
        },
        key=lambda line: (line.y1, line.x1, line.y2, line.x2),
    )
    result.lines = lines[:MOST_LINES]
    result.lines_left_out = len(lines) - len(result.lines)
    if result.boxes:
        result.width = MARGIN + max(box.x + BOX_WIDTH for box in result.boxes)
        result.height = MARGIN + max(box.y + BOX_HEIGHT for box in result.boxes)
    return result


def _kept_layers(all_layers: list[int], focus_layer: int | None) -> list[int]:
    """The layers drawn: all of them, or the :data:`DEEP` around ``focus_layer`` (from the top without one)."""
    if len(all_layers) <= DEEP:
        return all_layers
    start = 0 if focus_layer is None else max(0, min(focus_layer - DEEP // 2, len(all_layers) - DEEP))
    return all_layers[start : start + DEEP]


def _boxes(layer_jobs: list[int], jobs: Mapping[int, JobNode], layer: int, focus: int | None) -> list[Box]:
    """A box per job of the layer, or, past :data:`WIDE` of them, per task and status
    (per status when that is still too many), ``focus`` always on its own."""
    if len(layer_jobs) <= WIDE:
        return [Box([job], jobs[job].task, jobs[job].status, layer) for job in layer_jobs]
    own = [Box([focus], jobs[focus].task, jobs[focus].status, layer)] if focus in layer_jobs else []
    rest = [job for job in layer_jobs if job != focus]
    groups: dict[tuple[str | None, str | None], list[int]] = defaultdict(list)
    for job in rest:
        groups[jobs[job].task, jobs[job].status].append(job)
    if len(groups) > WIDE:
        groups = defaultdict(list)
        for job in rest:
            groups[None, jobs[job].status].append(job)
    return own + [Box(ids, task, status, layer) for (task, status), ids in groups.items()]
