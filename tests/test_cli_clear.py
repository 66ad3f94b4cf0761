"""End-to-end CLEAR: `lifelong run --stream clear-mini --protocol iid|streaming`, the matrix, seeds, resume."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.runner import RunSpec, execute
from lifelong.metrics.accuracy_matrix import clear_metrics
from lifelong.results.store import RunFolder

runner = CliRunner()
# a small clear-mini: 4 buckets (1 unlabeled + 3 labeled) of 11 classes x 10 images
SMALL = ["-s", "n_per_class=10", "-s", "unlabeled_per_bucket=0", "-s", "num_buckets=4"]
SMALL_OPTIONS = {"n_per_class": 10, "unlabeled_per_bucket": 0, "num_buckets": 4}


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


def test_iid_run_over_seeds_writes_matrix_heatmap_and_seed_summary(tmp_path):
    result = invoke(
        "run", "--stream", "clear-mini", *SMALL, "--learner", "nearest-mean", "--seeds", "2", "--out", tmp_path
    )
    assert result.exit_code == 0, result.output
    words = " ".join(result.output.split())  # rich wraps long titles (a long tmp path) at any width
    assert "iid protocol" in words and "in-domain" in words and "BwT" in words
    (folder,) = tmp_path.glob("clear-mini-iid-nearest-mean-*-seed0")  # -s options: a hash names the setup
    summary = json.loads((folder / "summary.json").read_text())
    matrix = np.array(summary["accuracy_matrix"])
    assert matrix.shape == (3, 3) and summary["matrix_complete"]
    assert summary["clear_metrics"] == pytest.approx(clear_metrics(matrix))
    records = RunFolder(folder).read_records()
    assert len(records) == 3 + 9
    predicted = [r for r in records if r["type"] == "predict"]
    assert {r["num_items"] for r in predicted} == {110 - 77}  # the 30% of each bucket of 110
    assert {"accuracy_matrix.png", "accuracy_matrix.csv"} <= {p.name for p in folder.iterdir()}
    csv = (folder / "accuracy_matrix.csv").read_text().splitlines()
    assert csv[0] == "after,bucket1,bucket2,bucket3" and len(csv) == 4
    seeds = json.loads(next(tmp_path.glob("*-seeds.json")).read_text())
    assert set(seeds["metrics"]) == {"in_domain", "next_domain", "acc", "bwt", "fwt"}
    assert seeds["metrics"]["acc"]["n"] == 2 and len(seeds["runs"]) == 2
    assert next(tmp_path.glob("*-seeds.png")).stat().st_size > 0


def test_streaming_reports_next_domain_and_fwt_only(tmp_path):
    result = invoke(
        "run",
        "--stream",
        "clear-mini",
        *SMALL,
        "--protocol",
        "streaming",
        "--learner",
        "nearest-mean",
        "--out",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(next(tmp_path.glob("*streaming*/summary.json")).read_text())
    assert set(summary["clear_metrics"]) == {"next_domain", "fwt"}
    records = [r for r in RunFolder(next(tmp_path.glob("*streaming*"))).read_records() if r["type"] == "predict"]
    assert {r["num_items"] for r in records} == {110}  # whole buckets


def test_protocol_is_checked(tmp_path):
    result = runner.invoke(app, ["run", "--stream", "mini", "--protocol", "iid", "--out", str(tmp_path)])
    assert result.exit_code != 0 and "temporal streams" in result.output
    result = runner.invoke(app, ["run", "--stream", "clear-mini", "--protocol", "online", "--out", str(tmp_path)])
    assert result.exit_code != 0 and "unknown protocol" in result.output


def test_interrupted_clear_run_resumes_to_identical_numbers(tmp_path):
    options = {"epochs": 1, "batch_size": 16}
    stream_options = {**SMALL_OPTIONS, "protocol": "iid"}
    common = {"stream": "clear-mini", "learner": "er", "learner_options": options, "stream_options": stream_options}
    full = execute(RunSpec(out=str(tmp_path / "full"), **common))
    execute(RunSpec(out=str(tmp_path / "part"), stop_after=5, **common))  # mid-matrix: after row 1, into row 2
    resumed = execute(RunSpec(out=str(tmp_path / "part"), resume=True, **common))
    assert resumed["accuracy_matrix"] == full["accuracy_matrix"]
    assert resumed["clear_metrics"] == full["clear_metrics"]
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in full["records"]]
    assert [{k: v for k, v in r.items() if k != "seconds"} for r in resumed["records"]] == strip


def _clear_release(root, buckets=(1, 2, 3), classes=("BACKGROUND", "bus", "camera"), per_class=10):
    """A tiny CLEAR release: labeled_images/<b>/<class>/*.png and features/moco/<b>/<class>.pth (id -> [D])."""
    import torch
    from support import write_png

    rng = np.random.default_rng(0)
    for b in buckets:
        for c, name in enumerate(classes):
            feats = {}
            for i in range(per_class):
                write_png(root / "labeled_images" / str(b) / name / f"{b}_{name}_{i}.png", 10 * b + c + i, 12, 12)
                feats[f"{b}_{name}_{i}"] = torch.from_numpy(rng.normal(3.0 * c, 1.0, size=4).astype(np.float32))
            path = root / "features" / "moco" / str(b) / f"{name}.pth"
            path.parent.mkdir(parents=True, exist_ok=True)
            torch.save(feats, path)
    return root


def test_clear_release_layout_runs_on_images_and_on_features(tmp_path):
    root = _clear_release(tmp_path / "clear10")
    out = tmp_path / "out"
    result = invoke("run", "--stream", "clear", "--data-root", root, "--learner", "nearest-mean", "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads(next(out.glob("clear-iid-nearest-mean-seed0/summary.json")).read_text())
    assert np.array(summary["accuracy_matrix"]).shape == (3, 3)
    result = invoke(
        "run", "--stream", "clear", "--data-root", tmp_path, "-s", "feature=moco", "--learner", "er",
        "-o", "encoder=features", "-o", "linear_epochs=100", "--protocol", "streaming", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(next(out.glob("clear-streaming-er-*-seed0/summary.json")).read_text())
    assert summary["clear_metrics"]["next_domain"] > 0.8  # classes 3 sigma apart in feature space


def test_timestamped_csv_becomes_buckets(tmp_path):
    from support import write_png

    rows = ["path,label,timestamp"]
    for i in range(120):
        name = f"img/{i}.png"
        write_png(tmp_path / name, i, 10, 10)
        label = "" if i % 10 == 9 else ("cat" if i % 2 else "dog")
        rows.append(f"{name},{label},{1_100_000_000 + 86_400 * i}")
    csv = tmp_path / "photos.csv"
    csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    result = invoke("run", "--stream", csv, "-s", "num_buckets=4", "--learner", "nearest-mean", "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads(next(out.glob("photos-iid-nearest-mean-*-seed0/summary.json")).read_text())
    assert np.array(summary["accuracy_matrix"]).shape == (3, 3)  # bucket 0 is for pretraining only


def test_matrix_summary_merges_seeds_run_separately(tmp_path):
    for seed in (0, 1):
        result = invoke(
            "run", "--stream", "clear-mini", *SMALL, "--learner", "nearest-mean", "--seed", seed, "--out", tmp_path
        )
        assert result.exit_code == 0, result.output
    folders = sorted(tmp_path.glob("*-seed[01]"))
    result = invoke("matrix-summary", *folders, "--out", tmp_path / "summary")
    assert result.exit_code == 0, result.output
    merged = json.loads(next((tmp_path / "summary").glob("*-seeds.json")).read_text())
    accs = [json.loads((f / "summary.json").read_text())["clear_metrics"]["acc"] for f in folders]
    assert merged["metrics"]["acc"]["mean"] == pytest.approx(np.mean(accs))
    assert merged["metrics"]["acc"]["n"] == 2
    # the parent folder, or a glob that also catches the -seeds.json files, gives the same summary
    for paths in ([tmp_path], [*sorted(tmp_path.glob("*")), *(tmp_path / "summary").glob("*")]):
        result = invoke("matrix-summary", *paths, "--out", tmp_path / "again", "--overwrite")  # the 2nd replaces
        assert result.exit_code == 0, result.output
        again = json.loads(next((tmp_path / "again").glob("*-seeds.json")).read_text())
        assert again["metrics"]["acc"] == merged["metrics"]["acc"]


def test_html_report_shows_accuracy_matrices(tmp_path):
    for protocol in ("iid", "streaming"):
        args = ("run", "--stream", "clear-mini", *SMALL, "--protocol", protocol, "--learner", "nearest-mean")
        assert invoke(*args, "--out", tmp_path).exit_code == 0
    folders = sorted(p for p in tmp_path.iterdir() if p.is_dir())
    result = invoke("report", *folders, "--out", tmp_path / "report")
    assert result.exit_code == 0, result.output
    assert 'href="clear.html"' in (tmp_path / "report" / "index.html").read_text()  # their own page
    page = (tmp_path / "report" / "clear.html").read_text()
    assert "Accuracy matrices" in page and "seed 0 (streaming protocol): accuracy matrix" in page
    assert "<td>streaming</td>" in page and "<td>iid</td>" in page
    assert (tmp_path / "report" / "accuracy_matrix_2.png").stat().st_size > 0


def test_records_name_the_split_each_bucket_used(tmp_path):
    result = invoke("run", "--stream", "clear-mini", *SMALL, "--learner", "nearest-mean", "--out", tmp_path)
    assert result.exit_code == 0, result.output
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    trains = [r for r in RunFolder(folder).read_records() if r["type"] == "train"]
    assert trains and {r["data_split"] for r in trains} == {"ours"}  # clear-mini has no official split
