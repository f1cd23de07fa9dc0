"""The quality dashboard's accuracy-against-speed chart keeps its labels legible: names never cover one
another or a point, and the threshold labels sit outside the plot, beside the axes."""

from __future__ import annotations

from itertools import combinations
from typing import Any

from annotations.quality.charts import (
    ACCURACY_RANGE,
    PLOT_HEIGHT_PX,
    PLOT_WIDTH_PX,
    accuracy_speed_figure,
    label_box,
    marker_size,
)


def row(
    name: str, accuracy: float, seconds: float, *, included: bool = True, gold: int = 12
) -> dict[str, Any]:
    return {
        "username": name, "gold_accuracy": accuracy, "median_seconds": seconds, "included": included,
        "gold_seen": gold, "gold_accuracy_within": accuracy, "too_fast_share": 0.0,
    }  # fmt: skip


def to_px(figure: dict[str, Any], x: float, y: float) -> tuple[float, float]:
    x0, x1 = figure["layout"]["xaxis"]["range"]
    y0, y1 = figure["layout"]["yaxis"]["range"]
    return (x - x0) / (x1 - x0) * PLOT_WIDTH_PX, (y1 - y) / (y1 - y0) * PLOT_HEIGHT_PX


def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def name_boxes(figure: dict[str, Any]) -> dict[str, tuple[float, float, float, float]]:
    boxes = {}
    for note in figure["layout"]["annotations"]:
        if note.get("name") == "annotator":
            x, y = to_px(figure, note["x"], note["y"])
            boxes[note["text"]] = label_box(x, y, (note["ax"], note["ay"]), note["text"])
    return boxes


CROWD = [
    row("carol", 0.82, 20.0), row("dave", 0.82, 20.5), row("erin", 0.82, 19.5), row("frank", 0.8, 20.0),
    row("eve", 0.3, 4.0, included=False), row("mallory", 0.3, 4.2, included=False),
    row("trent", 1.0, 30.0), row("peggy", 0.7, 10.0),
]  # fmt: skip


class TestAccuracySpeedLabels:
    def test_it_places_names_apart_from_each_other_and_from_every_point(self) -> None:
        figure = accuracy_speed_figure(CROWD, min_accuracy=0.7, min_seconds=5)
        boxes = name_boxes(figure)
        assert len(boxes) >= 6, boxes
        for (a, box_a), (b, box_b) in combinations(boxes.items(), 2):
            assert not overlap(box_a, box_b), (a, b)
        for person in CROWD:
            x, y = to_px(figure, person["median_seconds"], person["gold_accuracy"])
            radius = marker_size(person["gold_seen"]) / 2
            marker = (x - radius, y - radius, x + radius, y + radius)
            assert not any(overlap(marker, box) for box in boxes.values()), person["username"]

    def test_it_keeps_every_name_inside_the_plot(self) -> None:
        figure = accuracy_speed_figure(CROWD, min_accuracy=0.7, min_seconds=5)
        for box in name_boxes(figure).values():
            assert box[0] >= 0 and box[1] >= 0 and box[2] <= PLOT_WIDTH_PX and box[3] <= PLOT_HEIGHT_PX

    def test_it_puts_the_threshold_labels_beside_the_axes_outside_the_plot(self) -> None:
        figure = accuracy_speed_figure(CROWD, min_accuracy=0.7, min_seconds=5)
        thresholds = [n for n in figure["layout"]["annotations"] if n.get("name") == "threshold"]
        assert {n["text"] for n in thresholds} == {"reliable ≥ 70%", "minimum 5 s"}
        accuracy = next(n for n in thresholds if n["text"].startswith("reliable"))
        assert accuracy["xref"] == "paper" and accuracy["x"] > 1 and accuracy["xanchor"] == "left"
        speed = next(n for n in thresholds if n["text"].startswith("minimum"))
        assert speed["yref"] == "paper" and speed["y"] >= 1 and speed["yanchor"] == "bottom"
        assert figure["layout"]["yaxis"]["range"] == list(ACCURACY_RANGE)

    def test_it_still_names_every_annotator_on_hover(self) -> None:
        figure = accuracy_speed_figure(CROWD, min_accuracy=0.7, min_seconds=5)
        named = [name for trace in figure["data"] for name in trace["text"]]
        assert sorted(named) == sorted(person["username"] for person in CROWD)
        assert all(trace["mode"] == "markers" for trace in figure["data"])

    def test_it_labels_a_lone_annotator(self) -> None:
        figure = accuracy_speed_figure([row("solo", 0.9, 12.0)], min_accuracy=0.7, min_seconds=0)
        assert list(name_boxes(figure)) == ["solo"]
