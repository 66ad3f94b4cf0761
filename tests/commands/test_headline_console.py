"""Each system's headline metric where people look: the seed summary of `lifelong run --seeds K` leads with it (E
for task streams, top-1 per level for CoG probe runs), and `lifelong results` names the metric of every run, at
80 columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report.sample_runs import copy_fact_runs, write_cog_level_runs
from report.test_html import write_matrix_run, write_run
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.run_console import mean_std, print_runs
from lifelong.commands.terminal import console, error_console
from lifelong.results import ResultsDB


@pytest.fixture
def width80():
    """The consoles at 80 columns, as in a terminal with COLUMNS=80."""
    saved = console._width, error_console._width
    console.width = error_console.width = 80
    yield
    console._width, error_console._width = saved


def stream_result(seed: int, meta_test: float, mean: float, path: Path, *, meta_tasks: int = 5) -> dict:
    """What `runner.execute` returns for a task-stream run of 13 tasks (records left out: no table rows needed)."""
    return {
        "run_id": f"nevis-mini-finetune-knn-seed{seed}",
        "seed": seed,
        "path": str(path),
        "records": [],
        "mean_error": mean,
        "meta_test_mean_error": meta_test,
        "num_evaluated_tasks": 13,
        "num_meta_test_tasks": meta_tasks,
        "cumulative_train_flops": 5.154e12,
        "tasks_missing": [],
        "corrupt_skipped": 0,
        "skipped_labels": 0,
        "events_done": 26,
        "events_total": 26,
    }


def summary_lines(output: str, seeds: int) -> list[str]:
    """The lines of the seed summary, after its heading."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"over {seeds} seeds (mean ± std"))
    return [line.strip() for line in lines[start + 1 :] if line.startswith("  ")]


def test_the_seed_summary_of_a_task_stream_leads_with_e(tmp_path, capsys, width80) -> None:
    meta, mean = [0.314, 0.289, 0.340], [0.402, 0.371, 0.421]
    print_runs([stream_result(s, meta[s], mean[s], tmp_path / f"r{s}") for s in range(3)], tmp_path)
    lines = summary_lines(capsys.readouterr().out, 3)
    assert lines[0].startswith("E: "), lines  # the headline first
    first, second, flops = lines
    assert first.startswith("E: mean error over the 5 meta-test tasks") and first.endswith(mean_std(meta))
    assert second.startswith("mean error over all 13 tasks") and second.endswith(mean_std(mean))
    assert flops.startswith("cumulative training FLOPs")


def test_a_stream_without_a_meta_train_part_has_one_error_line(tmp_path, capsys, width80) -> None:
    results = [stream_result(s, 0.3 + s / 100, 0.3 + s / 100, tmp_path, meta_tasks=13) for s in range(2)]
    print_runs(results, tmp_path)
    first, second = summary_lines(capsys.readouterr().out, 2)
    assert first.startswith("E: mean error over all 13 tasks (all meta-test)") and first.endswith("0.3050 ± 0.0071")
    assert second.startswith("cumulative training FLOPs")


def test_the_seed_summary_of_cog_probe_runs_is_top1_per_level(tmp_path, capsys, width80) -> None:
    results = []
    for seed in (22, 37):  # a run over seen and L1 per seed, as `lifelong run --stream cog-mini --seeds 2` makes
        folders = write_cog_level_runs(tmp_path / str(seed), "toy", seed=seed)[:2]
        records = [json.loads(line) for f in folders for line in (f / "events.jsonl").read_text().splitlines()]
        result = stream_result(seed, 0.1, 0.1, folders[0]) | {"run_id": f"cog-mini-linear-probe-seed{seed}"}
        results.append(result | {"records": records, "num_evaluated_tasks": 2, "num_meta_test_tasks": 2})
    print_runs(results, tmp_path)
    out = capsys.readouterr().out
    assert "cog-mini-linear-probe: test top-1 (%): mean ± std over 2 seeds" in out and "population std" in out
    assert re.search(r"seen\s+│\s+\d+\.\d\d ± \d+\.\d\d", out) and "over 2 seeds (mean ± std, ddof=1)" not in out
    assert all(len(line) <= 80 or len(line.split()) == 1 for line in out.splitlines())  # or a path alone


def write_listing(root: Path) -> Path:
    """A runs folder with a run of each system in its results database: Nevis E 0.3317 (mean error 0.4360),
    CLEAR next-domain 91.04 %, CoG top-1 on a level, facts generalized top-5 20.48 %."""
    db = ResultsDB(root)
    nevis = write_run(root, "mini-independent-seed0", "independent", 0, [0.2, 0.5, 0.3, 0.6, 0.25, 0.35])
    clear = write_matrix_run(root, "clear-mini-iid-finetune-seed0", 0, buckets=3)
    cog = write_cog_level_runs(root.parent / "cog", "toy")[1]
    cog = cog.rename(root / cog.name)  # the L1 run alone
    facts = copy_fact_runs(root.parent / "facts")[0].rename(root / "facts-mini-random-fact-finetune-seed0")
    summaries = {
        nevis: {"meta_test_mean_error": 0.3317, "mean_error": 0.4360, "cumulative_train_flops": 5.308e12},
        clear: {"mean_error": 0.2, "clear_metrics": {"in_domain": 0.981, "next_domain": 0.9104}},
        cog: {"mean_error": 0.25, "meta_test_mean_error": 0.25, "cumulative_train_flops": 3.4e7},
        facts: {"mean_error": 0.8, "fact_generalized_mean_over_tasks": 0.2048, "cumulative_train_flops": 4.9e9},
    }
    for folder, summary in summaries.items():
        db.start_run(folder.name, "stream", "learner", 0, folder)
        db.finish_run(folder.name, "finished", summary)
    return root


def test_results_names_each_runs_headline_metric_at_80_columns(tmp_path) -> None:
    runs = write_listing(tmp_path / "runs")
    result = CliRunner().invoke(app, ["results", str(runs)], terminal_width=80)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert all(len(line) <= 80 for line in lines), result.output
    header = next(line for line in lines if line.startswith("run "))
    assert header.split() == ["run", "status", "metric", "value", "train", "FLOPs"]
    rows = {line.split()[0]: line for line in lines if line.split() and line.split()[0].endswith("seed0")}
    assert "finished  E " in rows["mini-independent-seed0"] and " 0.3317 " in rows["mini-independent-seed0"]
    assert "0.4360" not in result.output  # the mean over all tasks is no headline: it is in -v
    assert (
        "next-domain %" in rows["clear-mini-iid-finetune-seed0"] and " 91.04 " in rows["clear-mini-iid-finetune-seed0"]
    )
    cog = next(line for line in lines if "top-1 %" in line)
    assert cog.split()[-2] == "75.00"  # 100 x (1 - error), the CoG protocol's top-1
    facts = next(line for line in lines if "gen. top-5 %" in line)
    assert facts.split()[-2] == "20.48"
    from lifelong.report.systems import HEADLINES

    legend = [line for line in lines if ":" in line and "better" in line]
    assert legend == [headline.meaning for headline in HEADLINES.values()]  # one line per system shown
    verbose = CliRunner().invoke(app, ["results", str(runs), "-v"], terminal_width=80).output
    assert "mean error over all tasks: 0.4360" in verbose


def test_results_json_carries_each_runs_system_and_headline(tmp_path) -> None:
    runs = write_listing(tmp_path / "runs")
    listed = json.loads(CliRunner().invoke(app, ["results", str(runs), "--json"]).output)
    found = {run["run_id"]: (run["system"], run["headline"]) for run in listed}
    assert found["mini-independent-seed0"] == ("nevis", {"metric": "E", "value": 0.3317})
    assert found["clear-mini-iid-finetune-seed0"] == (
        "clear",
        {"metric": "next-domain %", "value": pytest.approx(91.04)},
    )
