"""`lifelong cog run` wiring on a synthetic features set: runs per (level, shots, seed), resume, table, report."""

from __future__ import annotations

import dataclasses

import pytest
from suites.test_cog import write_features_set
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.cog_console import print_cog_table
from lifelong.commands.cog_runs import cog_run_specs, cog_top1, run_cog_specs
from lifelong.commands.runner import execute
from lifelong.report.html import write_report


@pytest.fixture
def root(tmp_path):
    write_features_set(tmp_path / "data" / "cog-features" / "toy")
    return tmp_path


def specs_for(root, **changes):
    options = dict(levels=None, shots="all,2", seeds=2, probe="fast", out=root / "runs", resume=False)
    options |= dict(overwrite=False, data_root=root / "data", threads=1, progress=False)
    return cog_run_specs("toy", "cog-mini", **{**options, **changes})


def test_fan_out_results_table_and_results_command(root, capsys):
    specs = specs_for(root)
    assert len(specs) == 3 * 2 * 2 and {s.seed for s in specs} == {22, 37}
    results = run_cog_specs(specs)
    top1 = cog_top1(results)
    assert set(top1) == {(lv, s) for lv in ("seen", "L1", "L2") for s in ("all", "2")}
    assert all(len(v) == 2 for v in top1.values())
    print_cog_table(results, title="toy")
    assert "relative to seen" in capsys.readouterr().out
    assert (root / "runs" / "results.sqlite").is_file()
    listed = CliRunner().invoke(app, ["results", str(root / "runs"), "--json"])
    assert listed.exit_code == 0, listed.output
    assert listed.output.count('"linear-probe"') >= len(specs)

    page = write_report([s.folder for s in specs], root / "report")
    assert "cog.html" in page.read_text()
    cog = (root / "report" / "cog.html").read_text()
    assert "Relative top-1" in cog and "L2" in cog
    assert (root / "report" / "cog_levels.png").is_file() and (root / "report" / "cog_few_shot_0.png").is_file()
    assert not list((root / "report").glob("task_errors_*.png"))  # one-task probe runs: the CoG page draws them
    assert "drawn on the CoG page" in page.read_text()


def test_interrupted_run_resumes_to_the_same_numbers_and_finished_runs_are_kept(root):
    spec = specs_for(root, levels="seen", shots="all,2", seeds=1)
    whole = execute(dataclasses.replace(spec[0], out=str(root / "whole")))
    spec = specs_for(root, levels="seen", shots="all,2", seeds=1)[0]
    execute(dataclasses.replace(spec, stop_after=1))
    resumed = run_cog_specs([dataclasses.replace(spec, resume=True)])[0]
    errors = [(r["task"], r["error"]) for r in resumed["records"] if r["type"] == "predict"]
    assert errors == [(r["task"], r["error"]) for r in whole["records"] if r["type"] == "predict"]
    again = run_cog_specs([dataclasses.replace(spec, resume=True)])[0]  # finished: read back, not rerun
    assert [(r["task"], r["error"]) for r in again["records"] if r["type"] == "predict"] == errors


def test_cli_errors_without_encoder(tmp_path):
    result = CliRunner().invoke(app, ["cog", "run", "--encoder", str(tmp_path / "none.pt")])
    assert result.exit_code != 0 and "lifelong cog pretrain" in result.output


def test_pretrain_random_saves_a_seeded_untrained_control(tmp_path):
    import torch

    from lifelong.training.encoders import load_encoder

    paths = [tmp_path / name for name in ("a.pt", "b.pt", "c.pt")]
    for path, seed in zip(paths, (0, 0, 1), strict=True):
        result = CliRunner().invoke(
            app, ["cog", "pretrain", "--kind", "random", "--seed", str(seed), "--out", str(path)]
        )
        assert result.exit_code == 0, result.output
    weights = [list(load_encoder(p).parameters()) for p in paths]
    assert all(torch.equal(a, b) for a, b in zip(weights[0], weights[1], strict=True))
    assert not all(torch.equal(a, c) for a, c in zip(weights[0], weights[2], strict=True))
    wrong = CliRunner().invoke(app, ["cog", "pretrain", "--kind", "imagenet", "--out", str(tmp_path / "d.pt")])
    assert wrong.exit_code != 0 and "supervised, simclr or random" in wrong.output


def test_shots_above_what_a_level_gives_fail_before_any_run(root):
    specs_for(root, shots="16")  # 20 training rows per concept: 16 left after the 20% validation split
    with pytest.raises(ValueError, match=r"--shots 17 is more than level 'seen' can give: concept n0000000\d has 16"):
        specs_for(root, shots="all,17")
    assert not (root / "runs").exists()


def test_report_shows_levels_relative_to_a_baseline_encoder_with_intervals(root):
    write_features_set(root / "data" / "cog-features" / "other", seen_classes=10, seed=5)
    folders = []
    for features in ("toy", "other"):
        options = dict(levels=None, shots="all", seeds=2, probe="fast", out=root / "runs", resume=False)
        options |= dict(overwrite=False, data_root=root / "data", threads=1, progress=False)
        specs = cog_run_specs(features, "cog-mini", **options)
        run_cog_specs(specs)
        folders += [s.folder for s in specs]
    write_report(folders, root / "report", cog_baseline="toy")
    page = (root / "report" / "cog.html").read_text()
    assert "Relative to toy" in page and "seen-d1" not in page  # the seen draws pooled into one column
    table = page.split("Relative to toy")[1].split("</table>")[0]
    assert "<td>other</td>" in table and "<td>toy</td>" not in table
    assert sum(cell.startswith(("+", "-")) for cell in table.replace('<td class="num">', "\n").split("\n")) == 3
    absolute = page.split("<h2>Absolute</h2>")[1].split("</table>")[0]
    assert absolute.count(" [") >= 6  # every cell carries its interval over concepts
    with pytest.raises(ValueError, match="names no encoder; the CoG runs' encoders: other, toy"):
        write_report(folders, root / "report2", cog_baseline="nothing")
    cli = CliRunner().invoke(app, ["report", str(root / "runs"), "--out", str(root / "r3"), "--cog-baseline", "oth"])
    assert cli.exit_code == 0, cli.output
    assert "Relative to other" in (root / "r3" / "cog.html").read_text()
