"""HTML report from synthetic run folders: page and figures exist, figures are PNGs, strings are escaped.

`write_matrix_run` writes a CLEAR-style run (every bucket evaluated after each training event) and
`write_mixed_runs` a set of finished, unfinished and accuracy-matrix runs; the browser tests reuse them.
"""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from metrics.test_analysis import TASKS as ANALYSIS_TASKS
from metrics.test_analysis import write_run as write_analysis_run
from PIL import Image
from report.sample_runs import copy_fact_runs

from lifelong.metrics.accuracy_matrix import IID_METRICS, clear_metrics
from lifelong.metrics.analysis import slices
from lifelong.report.figures import slice_labels
from lifelong.report.html import write_report
from lifelong.report.layout import MAX_WIDTH_PX
from lifelong.results import ResultsDB, RunFolder

# the tasks of metrics.test_analysis, their domains named as every stream names them (lifelong.core.domains)
TASKS = [(n, y, {"objects": "object", "textures": "texture"}.get(d, d), o, k) for n, y, d, o, k in ANALYSIS_TASKS]


def write_run(*args, tasks: list[tuple] = TASKS, **kwargs) -> Path:
    """`metrics.test_analysis.write_run` over TASKS."""
    return write_analysis_run(*args, tasks=tasks, **kwargs)


NASTY = "<script>alert('x')</script>&$1$"  # HTML markup, an entity start and mathtext dollars


class PageParser(HTMLParser):
    """Collects the page's tags with their attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def page_tags(index: Path) -> list[tuple[str, dict[str, str | None]]]:
    parser = PageParser()
    parser.feed(index.read_text(encoding="utf-8"))
    return parser.tags


def image_sources(index: Path) -> list[str]:
    return [str(attrs["src"]) for tag, attrs in page_tags(index) if tag == "img"]


def write_runs(root: Path) -> list[Path]:
    """Two seeds of Independent, one transfer learner whose names need escaping, with dev curves for FT."""
    curves = [[0.6, 0.4], [0.5], [0.7, 0.5], [0.8], [0.3, 0.2], [0.5, 0.4]]
    return [
        write_run(root, "syn-independent-seed0", "independent", 0, [0.2, 0.5, 0.3, 0.6, 0.25, 0.35], flops=4e12),
        write_run(root, "syn-independent-seed1", "independent", 1, [0.25, 0.45, 0.3, 0.5, 0.35, 0.45], flops=4.2e12),
        write_run(root, f"syn-{NASTY}", NASTY, 0, [0.1, 0.4, 0.2, 0.5, 0.1, 0.2], flops=1e13, curves=curves),
    ]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of `write_runs`, written once for the tests that only read it."""
    root = tmp_path_factory.mktemp("report")
    return write_report(write_runs(root / "runs"), root / "report")


def page(index: Path, name: str) -> str:
    return (index.parent / name).read_text(encoding="utf-8")


def test_index_links_the_task_stream_page_with_its_figures_and_tables(report: Path) -> None:
    index, out = report, report.parent
    assert index.name == "index.html" and index.is_file()
    assert 'href="nevis.html"' in index.read_text(encoding="utf-8")
    assert not image_sources(index)  # the index lists systems and runs; figures are on the systems' pages
    assert not (out / "clear.html").exists() and not (out / "cog.html").exists()  # no such runs: no such pages
    sources = image_sources(out / "nevis.html")
    expected = {"error_vs_cflop.png", "task_errors_1.png", "regret_1.png", "slices_domain.png", "slices_size.png"}
    assert set(sources) == expected
    for src in sources:
        assert "/" not in src and ":" not in src  # relative links to files beside the page
        with Image.open(out / src) as image:
            image.verify()
        with Image.open(out / src) as image:
            assert image.format == "PNG" and image.width >= 300 and image.height >= 200
    text = page(index, "nevis.html")
    assert "0.3500 ± 0.0707" in text  # meta-test E of Independent: 0.3 (seed 0) and 0.4 (seed 1)
    assert "digits" in text and "+0.500" in text  # FT of digits: AUC 0.5 -> 0.75
    assert "no per-task resolution in run.json" in text
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_runs_get_short_labels_and_every_page_maps_them_to_run_ids(report: Path) -> None:
    rows = table_rows(report, "<h2>Runs</h2>")
    assert [(row[0], row[1]) for row in rows] == [
        ("R1", "syn-independent-seed0"),
        ("R2", "syn-independent-seed1"),
        ("R3", f"syn-{NASTY}"),
    ]
    nevis = report.with_name("nevis.html")
    assert [row[:2] for row in table_rows(nevis, "<h2>Runs</h2>")] == [row[:2] for row in rows]


def test_regret_names_each_runs_reference_and_why(report: Path) -> None:
    pairs = {row[0]: row[1:] for row in table_rows(report.with_name("nevis.html"), "why this reference")}
    assert pairs["R3"] == ["R1: syn-independent-seed0", "the independent run of the same stream and seed"]
    assert pairs["R1"][0] == "-" and "a reference" in pairs["R1"][1]


def test_report_escapes_strings_and_loads_nothing_external(report: Path) -> None:
    for name in ("index.html", "nevis.html"):
        text = page(report, name)
        assert "<script" not in text and "alert('x')" not in text
        assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;$1$" in text
        tags = page_tags(report.with_name(name))
        assert {tag for tag, _ in tags}.isdisjoint({"script", "link", "iframe", "object", "embed"})
        for _, attrs in tags:
            for key in ("src", "href"):
                value = attrs.get(key) or ""
                assert "//" not in value and not value.startswith(("http", "data:", "/"))


def test_reference_choice_and_other_streams(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs")
    other = write_run(
        tmp_path / "runs", "other-independent-seed0", "independent", 0, [0.2] * 4, stream="other", tasks=TASKS[:4]
    )
    index = write_report([*runs, other], tmp_path / "report", reference=NASTY)  # a learner
    pairs = {row[0]: row[1:] for row in table_rows(index.with_name("nevis.html"), "why this reference")}
    assert pairs["R1"] == [f"R3: syn-{NASTY}", f"the {NASTY} run of the same stream and seed (named by --reference)"]
    assert pairs["R2"][0] == f"R3: syn-{NASTY}" and "none has seed 1" in pairs["R2"][1]
    assert pairs["R4"] == ["-", "the only run over other (dev_test): nothing to compare"]
    assert (tmp_path / "report" / "task_errors_2.png").is_file()  # one per-task figure per stream
    index = write_report([*runs, other], tmp_path / "report", reference="syn-independent-seed1")  # a run id
    pairs = {row[0]: row[1:] for row in table_rows(index.with_name("nevis.html"), "why this reference")}
    assert pairs["R1"] == ["R2: syn-independent-seed1", "named by --reference"]
    assert pairs["R3"] == ["R2: syn-independent-seed1", "named by --reference"]
    with pytest.raises(ValueError, match="neither a run id nor a learner.*syn-independent-seed0"):
        write_report(runs, tmp_path / "report", reference="nope")


def test_partial_run_gets_a_note_not_a_curve(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs")
    partial = write_run(tmp_path / "runs", "syn-partial-seed0", "partial", 0, [0.2] * 4, tasks=TASKS[:4])
    text = page(write_report([*runs, partial], tmp_path / "report"), "nevis.html")
    assert "no curve: cannot compare runs that evaluated different tasks" in text
    assert "not drawn (no meta-test task evaluated): R4" in text


def test_clear_errors(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs")
    (tmp_path / "not_a_run").mkdir()
    with pytest.raises(FileNotFoundError, match="no events.jsonl"):
        write_report([runs[0], tmp_path / "not_a_run"], tmp_path / "report")
    with pytest.raises(ValueError, match=f"run syn-independent-seed0 given twice: {runs[0]} and {runs[0]}"):
        write_report([runs[0], runs[0]], tmp_path / "report")
    with pytest.raises(ValueError, match="no run folders"):
        write_report([], tmp_path / "report")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        write_report(runs, tmp_path / "file")


# ------------------------------------------------------------------------ accuracy-matrix and unfinished runs


def write_matrix_run(
    root: Path, run_id: str, seed: int, *, buckets: int = 3, trained: int | None = None, learner: str = "nearest-mean"
) -> Path:
    """A run folder as `lifelong run --stream clear-...` writes it: after training bucket i, a predict record
    for every bucket j (after_task_index i, task_index j); `trained` < `buckets` stops early (interrupted)."""
    trained = buckets if trained is None else trained
    folder = RunFolder(root / run_id)
    uids = [f"bucket{i + 1}" for i in range(buckets)]
    key = {"kind": "multi-class", "num_classes": 11, "domain": "ocr", "occurrence": 0}
    tasks = [{"uid": u, "name": u, "year": 2005 + i, **key} for i, u in enumerate(uids)]
    config = {"stream": "syn-clear", "learner": learner, "seed": seed, "eval_split": "dev_test", "learner_options": {}}
    stream = {
        "name": "syn-clear-iid",
        "tasks": tasks,
        "eval_split": "dev_test",
        "meta_test_from_year": None,
        "evaluation": "all",
        "protocol": "iid",
    }
    folder.write_json("run.json", {"run_id": run_id, "config": config, "seed": seed, "stream": stream})
    event, total = 0, 0.0
    for i in range(trained):
        total += 1e6
        common = {"run_id": run_id, "task_kind": "multi-class", "domain": "ocr", "occurrence": 0, "meta_test": True}
        common |= {"cumulative_train_flops": total, "after_task_index": i}
        folder.append_record(
            {**common, "event": event, "type": "train", "task": uids[i], "task_name": uids[i], "task_index": i}
            | {"year": 2005 + i, "split": "train", "error": None, "num_items": 2000, "train_flops": 1e6}
            | {"dev_curve": []}
        )
        event += 1
        for j in range(buckets):
            error = 0.2 + 0.1 * abs(i - j) + 0.01 * seed
            folder.append_record(
                {**common, "event": event, "type": "predict", "task": uids[j], "task_name": uids[j], "task_index": j}
                | {"year": 2005 + j, "split": "dev_test", "error": error, "num_items": 900, "train_flops": 0.0}
            )
            event += 1
    folder.write_json("summary.json", {"run_id": run_id, "events_done": event, "events_total": buckets * (buckets + 1)})
    return folder.path


def write_mixed_runs(root: Path) -> list[Path]:
    """Independent (seed 0 finished, seed 1 killed: no summary.json), a run the results database marks failed,
    and two accuracy-matrix runs (seed 0 finished, seed 1 interrupted after 2 of 4 buckets)."""
    errors = [0.2, 0.5, 0.3, 0.6, 0.25, 0.35]
    runs = [
        write_run(root, "syn-independent-seed0", "independent", 0, errors),
        write_run(root, "syn-independent-seed1", "independent", 1, errors),
        write_run(root, "syn-finetune-seed0", "finetune", 0, errors),
        write_matrix_run(root, "syn-clear-seed0", 0, buckets=4),
        write_matrix_run(root, "syn-clear-seed1", 1, buckets=4, trained=2),
    ]
    (runs[1] / "summary.json").unlink()
    db = ResultsDB(root)
    db.start_run("syn-finetune-seed0", "syn", "finetune", 0, runs[2])
    db.finish_run("syn-finetune-seed0", "failed", {"error": "RuntimeError: CUDA out of memory"})
    return runs


@pytest.fixture(scope="module")
def mixed_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    return write_report(write_mixed_runs(root / "runs"), root / "report")


def table_rows(index: Path, heading: str) -> list[list[str]]:
    """The cells (markup stripped, whitespace collapsed) of each body row of the table after `heading`."""
    text = index.read_text(encoding="utf-8")
    table = text[text.index(heading) :]
    body = table[table.index("<tbody>") : table.index("</tbody>")]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.DOTALL)
    cell = re.compile(r"<td[^>]*>(.*?)</td>", re.DOTALL)
    return [[" ".join(unescape(re.sub(r"<[^>]+>", "", c)).split()) for c in cell.findall(row)] for row in rows]


def test_matrix_runs_get_their_own_page_and_stay_off_the_error_vs_compute_axes(mixed_report: Path) -> None:
    clear, nevis = mixed_report.with_name("clear.html"), mixed_report.with_name("nevis.html")
    assert 'href="clear.html"' in mixed_report.read_text(encoding="utf-8")
    assert {row[1] for row in table_rows(nevis, "<h2>Runs</h2>")} == {
        "syn-independent-seed0",
        "syn-independent-seed1",
        "syn-finetune-seed0",
    }  # the error-vs-compute figure and tables of task streams hold no accuracy-matrix run
    assert "syn-clear" not in nevis.read_text(encoding="utf-8")
    rows = {row[1]: row for row in table_rows(clear, "<h2>Runs</h2>")}
    assert set(rows) == {"syn-clear-seed0", "syn-clear-seed1"}
    assert rows["syn-clear-seed0"][7] == "4 buckets, 4 × 4 evaluations"
    assert rows["syn-clear-seed1"][7] == "4 buckets, 2 × 4 evaluations"
    i, j = np.indices((4, 4))
    expected = clear_metrics(0.8 - 0.1 * np.abs(i - j))  # write_matrix_run's error: 0.2 + 0.1 |i - j|
    assert rows["syn-clear-seed0"][8:] == [f"{100 * expected[k]:.2f}" for k in IID_METRICS]  # in-domain .. FwT
    assert rows["syn-clear-seed1"][8:] == ["-"] * 5  # interrupted: no metrics from a part of R


def test_only_matrix_runs_make_no_task_stream_page(tmp_path: Path) -> None:
    runs = [write_matrix_run(tmp_path / "runs", "syn-clear-seed0", 0)]
    index = write_report(runs, tmp_path / "report")
    assert not (tmp_path / "report" / "nevis.html").exists()
    assert not (tmp_path / "report" / "error_vs_cflop.png").exists()
    assert 'href="clear.html"' in index.read_text(encoding="utf-8")


def test_fact_runs_get_their_page_not_the_clear_one_nor_the_error_vs_compute_axes(tmp_path: Path) -> None:
    """Fact runs evaluate every task after each training event too, but they are fact learning, not CLEAR."""
    facts = copy_fact_runs(tmp_path / "facts")
    index = write_report([*facts, write_runs(tmp_path / "runs")[0]], tmp_path / "report")
    assert not (tmp_path / "report" / "clear.html").exists()
    assert {row[1] for row in table_rows(index.with_name("nevis.html"), "<h2>Runs</h2>")} == {"syn-independent-seed0"}
    assert [row[1] for row in table_rows(index.with_name("facts.html"), "<h2>Runs</h2>")] == [f.name for f in facts]
    pages = {row[1]: row[2] for row in table_rows(index, "<h2>Runs</h2>")}
    assert pages == {facts[0].name: "Facts", facts[1].name: "Facts", "syn-independent-seed0": "Task streams"}


def test_matrix_runs_draw_one_curve_per_bucket_not_every_evaluation_on_one_line(mixed_report: Path) -> None:
    assert "task_errors_2.png" not in image_sources(mixed_report.with_name("nevis.html"))  # no tangle of evaluations
    sources = image_sources(mixed_report.with_name("clear.html"))
    assert {"bucket_errors_1.png", "bucket_errors_2.png", "accuracy_matrix_1.png", "accuracy_matrix_2.png"} <= set(
        sources
    )
    assert "One curve per evaluated bucket" in page(mixed_report, "clear.html")


def test_seed_tables_count_seeds_and_list_their_ids(mixed_report: Path) -> None:
    rows = {(row[0], row[1]): row for row in table_rows(mixed_report.with_name("nevis.html"), "Mean ± std over seeds")}
    independent = rows["syn (dev_test)", "independent"]
    assert independent[2] == "2" and independent[3].startswith("0, 1")
    assert rows["syn (dev_test)", "finetune"][2] == "1"
    assert 'title="seed ids: 0, 1">2</td>' in page(mixed_report, "nevis.html")
    rows = {(row[0], row[1]): row for row in table_rows(mixed_report.with_name("clear.html"), "Mean ± std over seeds")}
    assert rows["syn-clear-iid (dev_test)", "nearest-mean"][2:4] == ["2", "0, 1 (not finished: seed 1)"]


def test_unfinished_runs_show_their_status(mixed_report: Path) -> None:
    status = {row[1]: row[3] for row in table_rows(mixed_report, "<h2>Runs</h2>")}
    assert status["syn-independent-seed0"] == "finished"
    assert status["syn-clear-seed0"] == "finished"
    assert status["syn-independent-seed1"].startswith("incomplete: no summary.json, 12 events recorded")
    assert status["syn-finetune-seed0"] == "failed (12 events recorded): RuntimeError: CUDA out of memory"
    assert status["syn-clear-seed1"] == "interrupted after 10 of 20 events"
    text = mixed_report.read_text(encoding="utf-8")
    assert text.count('<tr class="unfinished">') == 3
    assert "Not finished: R2 (syn-independent-seed1), R3 (syn-finetune-seed0), R5 (syn-clear-seed1)." in text


def test_interrupted_status_from_the_results_database(tmp_path: Path) -> None:
    run = write_run(tmp_path / "runs", "syn-independent-seed0", "independent", 0, [0.2] * 6)
    db = ResultsDB(tmp_path / "runs")
    db.start_run("syn-independent-seed0", "syn", "independent", 0, run)
    db.finish_run("syn-independent-seed0", "interrupted", None)
    status = table_rows(write_report([run], tmp_path / "report"), "<h2>Runs</h2>")[0][3]
    assert status == "interrupted (12 events recorded)"


def test_one_run_gets_no_empty_regret_figure(tmp_path: Path) -> None:
    run = write_run(tmp_path / "runs", "syn-independent-seed0", "independent", 0, [0.2] * 6)
    nevis = write_report([run], tmp_path / "report").with_name("nevis.html")
    assert not [s for s in image_sources(nevis) if s.startswith("regret")]
    assert not list((tmp_path / "report").glob("regret*.png"))
    text = nevis.read_text(encoding="utf-8")
    regret = text[text.index("<h2>Regret</h2>") : text.index("<h2>Slices</h2>")]
    assert "the only run over syn (dev_test): nothing to compare" in regret
    assert "no regret curve" in regret


def test_size_slices_in_size_order_whatever_run_comes_first() -> None:
    medium_only = write_records_of(TASKS[1:2])  # 3,000 items: the first run has no small task
    per_run = [("medium", slices(medium_only, "size")), ("all", slices(write_records_of(TASKS), "size"))]
    assert slice_labels(per_run, "size") == ["< 1,000", "1,000-10,000", ">= 10,000"]
    resolutions = [("a", {"64": {}, "(none)": {}}), ("b", {"8": {}, "32": {}})]
    assert slice_labels(resolutions, "resolution") == ["8", "32", "64", "(none)"]
    assert slice_labels([("a", {"(none)": {}, "ocr": {}}), ("b", {"art": {}})], "domain") == ["art", "ocr", "(none)"]


def write_records_of(tasks: list[tuple]) -> list[dict]:
    from metrics.test_analysis import stream_records

    return stream_records([0.5] * len(tasks), tasks=tasks)


LONG = "a-learner-with-a-long-name-lr=0.001-epochs=100-batch=256-warmup=5"


def test_no_figure_is_clipped_or_wider_than_the_page_with_long_names(tmp_path: Path) -> None:
    """Every figure at its saved size keeps a blank margin (no label, legend or annotation runs off its edge), and
    is no wider than the page's content."""
    tasks = [(f"{n}_with_a_rather_long_dataset_name", y, d, o, items) for n, y, d, o, items in TASKS]
    errors = [0.2, 0.5, 0.3, 0.6, 0.25, 0.35]
    runs = [
        write_run(tmp_path / "runs", "long-independent-seed0", "independent", 0, errors, tasks=tasks, flops=4e12),
        write_run(tmp_path / "runs", f"long-{LONG}-seed0", LONG, 0, [e / 2 for e in errors], tasks=tasks, flops=1e14),
        write_run(tmp_path / "runs", f"long-{LONG}-seed1", LONG, 1, [e / 2 for e in errors], tasks=tasks, flops=1e14),
    ]
    index = write_report(runs, tmp_path / "report")
    for src in image_sources(index.with_name("nevis.html")):
        with Image.open(tmp_path / "report" / src) as image:
            pixels = np.asarray(image.convert("L"))
        assert pixels.shape[1] <= MAX_WIDTH_PX, f"{src} is {pixels.shape[1]} px wide"
        edges = {"top": pixels[:3], "bottom": pixels[-3:], "left": pixels[:, :3], "right": pixels[:, -3:]}
        inked = [side for side, strip in edges.items() if strip.min() < 250]
        assert not inked, f"{src} ({pixels.shape[1]} x {pixels.shape[0]}) is drawn up to its {inked} edge(s)"
