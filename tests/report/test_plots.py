"""Run plots: valid, non-empty PNG files for ordinary, single-task, empty and partly scored runs."""

from pathlib import Path

import pytest
from PIL import Image

from lifelong.report.layout import MAX_WIDTH_PX
from lifelong.report.plots import (
    keep_axes_size,
    new_figure,
    outside_legend,
    plot_cumulative_flops,
    plot_run,
    plot_task_errors,
    set_task_ticks,
)


def stream_records(num_tasks: int, meta_test_from: int = 0) -> list[dict]:
    records, total = [], 0.0
    for t in range(num_tasks):
        uid = f"task{t}" if t % 3 else f"task{t}#1"
        flops = 1e9 * (t + 1)
        total += flops
        common = {"run_id": "r", "task": uid, "task_name": uid.split("#")[0], "meta_test": t >= meta_test_from}
        records.append(
            {
                **common,
                "event": 2 * t,
                "type": "train",
                "error": None,
                "train_flops": flops,
                "cumulative_train_flops": total,
            }
        )
        records.append(
            {
                **common,
                "event": 2 * t + 1,
                "type": "predict",
                "error": 0.05 * (t % 10),
                "train_flops": 0.0,
                "cumulative_train_flops": total,
            }
        )
    return records


def assert_png(path: Path, min_width: int = 100) -> None:
    assert path.is_file() and path.stat().st_size > 0
    with Image.open(path) as image:
        image.verify()
    with Image.open(path) as image:
        assert image.format == "PNG" and image.width >= min_width and image.height >= 100
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_plot_run_writes_both_plots(tmp_path: Path) -> None:
    paths = plot_run(stream_records(12, meta_test_from=8), tmp_path / "plots")
    assert [p.name for p in paths] == ["task_errors.png", "cumulative_flops.png"]
    for path in paths:
        assert_png(path)


def test_single_task(tmp_path: Path) -> None:
    records = stream_records(1)
    assert_png(plot_task_errors(records, tmp_path / "errors.png"))
    assert_png(plot_cumulative_flops(records, tmp_path / "flops.png"))


def test_missing_errors_and_flops_are_drawn_not_fatal(tmp_path: Path) -> None:
    records = stream_records(4, meta_test_from=2)
    records[3]["error"] = None
    for r in records:
        r.pop("cumulative_train_flops")  # older records: cumulative FLOPs summed from per-event FLOPs
    records[0]["train_flops"] = 0.0  # a zero cannot sit on a log axis
    assert_png(plot_task_errors(records, tmp_path / "errors.png"))
    assert_png(plot_cumulative_flops(records, tmp_path / "flops.png"))


@pytest.mark.parametrize("records", [[], stream_records(2)[:1]], ids=["no records", "train only"])
def test_runs_without_predictions_or_flops(tmp_path: Path, records: list[dict]) -> None:
    for path in plot_run(records, tmp_path):
        assert_png(path)


def test_long_stream_fits_the_page_with_every_task_labelled(tmp_path: Path) -> None:
    """Nevis-full's 106 tasks: one label per task, none overlapping (save_png checks), no wider than the page."""
    path = plot_task_errors(stream_records(106, meta_test_from=79), tmp_path / "errors.png")
    assert_png(path, min_width=1000)
    with Image.open(path) as image:
        assert image.width <= MAX_WIDTH_PX


def test_long_labels_do_not_squash_the_axes() -> None:
    """Long rotated task uids and a legend of long run ids: the figure grows, the axes keep their size."""
    fig, ax = new_figure(6.0, 4.5)
    uids = [f"task_{i}_with_a_very_long_uid_from_a_manifest_file#1" for i in range(6)]
    ax.plot(range(6), [0.5] * 6, label="a-run-id-" * 12)
    set_task_ticks(ax, uids)
    outside_legend(ax, fontsize=7)
    keep_axes_size(fig, ax, 4.0, 2.8)
    width, height = fig.get_size_inches()
    assert width > 6.0 and height > 4.5
    fig.get_layout_engine().execute(fig)
    box = ax.get_position()
    assert box.width * width >= 3.8 and box.height * height >= 2.6
    legend = ax.get_legend().get_texts()[0].get_text()
    assert max(map(len, legend.splitlines())) <= 40  # long legend labels are wrapped
