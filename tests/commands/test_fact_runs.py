"""A fact run from the command line to the report: `lifelong run --stream facts-mini --seeds 2`, then facts.html.

Uses a small facts-mini (44 facts, 16 px, about 400 images) so that two seeds of one epoch take seconds; skipped
where the emoji artwork is not installed (scripts/install-cog-mini.sh).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _prereq import emoji_art
from PIL import Image
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.report.html import write_report

SMALL = {"size": 16, "n_sp": 8, "n_spo": 12, "n_images": 388, "min_per_fact": 2, "max_per_fact": 40}
SMALL.update(test_per_fact=2, split="random", tasks=3)
FAST = {"epochs": 1, "batch_size": 32, "resolution": 16}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    emoji_art()
    root = tmp_path_factory.mktemp("fact-runs")
    args = ["run", "--stream", "facts-mini", "--learner", "fact-finetune", "--seeds", "2"]
    args += ["--out", str(root / "runs"), "--data-root", str(root / "data")]
    for key, value in SMALL.items():
        args += ["-s", f"{key}={value}"]
    for key, value in FAST.items():
        args += ["-o", f"{key}={value}"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return root / "runs", result.output


def test_the_run_command_prints_R_and_the_headline_figures_and_a_seed_summary(runs):
    out, output = runs
    assert "after \\ on" in output and "untrained" in output  # R, with the untrained model's row b
    assert "standard, tasks" in output and "generalized, examples" in output and "BWT" in output
    assert "mean ± std" in output and "seed summary:" in output
    (seeds,) = out.glob("*-seeds.json")
    document = json.loads(seeds.read_text())
    assert document["seeds"] == [0, 1]
    generalized = document["metrics"]["fact_generalized_mean_over_tasks"]
    assert generalized["n"] == 2 and len(generalized["values"]) == 2 and generalized["std"] is not None
    standard = document["metrics"]["fact_standard_mean_over_tasks"]
    assert standard["mean"] >= generalized["mean"]  # the standard ranking is over a subset of the candidates


def test_the_report_gains_a_fact_page_with_R_heatmap_and_long_tail(runs, tmp_path):
    out, _ = runs
    assert len([p for p in out.iterdir() if p.is_dir()]) == 2
    index = write_report([out], tmp_path / "report")  # the parent folder stands for its run folders
    again = write_report(sorted(out.glob("facts-mini-*")), tmp_path / "again")  # a glob that catches seeds.json
    assert again.read_text(encoding="utf-8") == index.read_text(encoding="utf-8")
    assert 'href="facts.html"' in index.read_text(encoding="utf-8")
    page = (tmp_path / "report" / "facts.html").read_text(encoding="utf-8")
    assert "<td>fact-finetune</td>" in page and "<td>random</td>" in page and "<td>2</td>" in page
    assert page.count("±") >= 5  # mean ± std over the two seeds in the figures' columns
    for name in ("facts_R_1.png", "facts_long_tail.png"):
        assert f'src="{name}"' in page
        with Image.open(tmp_path / "report" / name) as image:
            assert image.format == "PNG"
