"""HTML report from synthetic run folders: page and figures exist, figures are PNGs, strings are escaped."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest
from metrics.test_analysis import TASKS, write_run
from PIL import Image

from lifelong.report.html import write_report

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


def test_report_pages_figures_and_tables(report: Path) -> None:
    index, out = report, report.parent
    assert index.name == "index.html" and index.is_file()
    sources = image_sources(index)
    expected = {"error_vs_cflop.png", "task_errors_1.png", "regret.png", "slices_domain.png", "slices_size.png"}
    assert set(sources) == expected
    for src in sources:
        assert "/" not in src and ":" not in src  # relative links to files beside the page
        with Image.open(out / src) as image:
            image.verify()
        with Image.open(out / src) as image:
            assert image.format == "PNG" and image.width >= 300 and image.height >= 200
    text = index.read_text(encoding="utf-8")
    assert "regret reference: <code>syn-independent-seed0</code>" in text  # the first Independent run
    assert "0.3500 ± 0.0707" in text  # meta-test E of Independent: 0.3 (seed 0) and 0.4 (seed 1)
    assert "digits" in text and "+0.500" in text  # FT of digits: AUC 0.5 -> 0.75
    assert "no per-task resolution in run.json" in text
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_report_escapes_strings_and_loads_nothing_external(report: Path) -> None:
    text = report.read_text(encoding="utf-8")
    assert "<script" not in text and "alert('x')" not in text
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;$1$" in text
    tags = page_tags(report)
    assert {tag for tag, _ in tags}.isdisjoint({"script", "link", "iframe", "object", "embed"})
    for _, attrs in tags:
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert "//" not in value and not value.startswith(("http", "data:", "/"))


def test_reference_choice_and_other_streams(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs")
    other = write_run(
        tmp_path / "runs", "other-independent-seed0", "independent", 0, [0.2] * 4, stream="other", tasks=TASKS[:4]
    )
    index = write_report([*runs, other], tmp_path / "report", reference=NASTY)
    text = index.read_text(encoding="utf-8")
    assert "regret reference: <code>syn-&lt;script&gt;" in text  # picked by learner name
    assert "other-independent-seed0 is over other (dev_test)" in text  # no regret curve across streams, and why
    assert (tmp_path / "report" / "task_errors_2.png").is_file()  # one per-task figure per stream
    index = write_report([*runs, other], tmp_path / "report", reference="syn-independent-seed1")
    assert "regret reference: <code>syn-independent-seed1</code>" in index.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="neither a run id nor a learner.*syn-independent-seed0"):
        write_report(runs, tmp_path / "report", reference="nope")


def test_partial_run_gets_a_note_not_a_curve(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs")
    partial = write_run(tmp_path / "runs", "syn-partial-seed0", "partial", 0, [0.2] * 4, tasks=TASKS[:4])
    text = write_report([*runs, partial], tmp_path / "report").read_text(encoding="utf-8")
    assert "syn-partial-seed0: cannot compare runs that evaluated different tasks" in text
    assert "not drawn (no meta-test task evaluated): syn-partial-seed0" in text


def test_clear_errors(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs")
    (tmp_path / "not_a_run").mkdir()
    with pytest.raises(FileNotFoundError, match="no events.jsonl"):
        write_report([runs[0], tmp_path / "not_a_run"], tmp_path / "report")
    with pytest.raises(ValueError, match="given twice"):
        write_report([runs[0], runs[0]], tmp_path / "report")
    with pytest.raises(ValueError, match="no run folders"):
        write_report([], tmp_path / "report")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        write_report(runs, tmp_path / "file")
