"""One set of conventions across commands (issue 22): --resume/--overwrite, --skip-corrupt, listings, CLI words.

Every test runs the commands as a user types them (typer's CliRunner at 80 columns).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from support import write_corrupt_png, write_png
from typer.testing import CliRunner

from lifelong.cli import app

PRETRAIN = ["--epochs", "1", "--resolution", "16", "-o", "n_per_class=6", "-o", "size=16"]
TWO_TASKS = """
name: pair
tasks:
  - {name: letters, source: "builtin:letters", year: 2001, resolution: 16, options: {n_per_class: 6, size: 16}}
  - {name: digits, source: "builtin:digits", year: 2002, resolution: 16, options: {n_per_class: 6}}
"""
SSL = ["--epochs", "1", "--resolution", "8", "-s", "unlabeled_per_bucket=32", "-s", "n_per_class=2"]


def _invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=80)


def _says_both_flags(result) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and "--resume" in result.output and "--overwrite" in result.output


# ---------------------------------------------------------------------------------------------------------
# --resume / --overwrite


def test_pretrain_refuses_an_existing_output_and_resumes_or_overwrites_it(tmp_path):
    out = tmp_path / "letters.pt"
    assert _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN).exit_code == 0
    first = out.read_bytes()
    assert not (tmp_path / "letters.pt.work").exists()  # removed on success
    _says_both_flags(_invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN))
    kept = _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN, "--resume")
    assert kept.exit_code == 0 and out.read_bytes() == first, kept.output
    redone = _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN, "--epochs", "2", "--overwrite")
    assert redone.exit_code == 0 and out.read_bytes() != first, redone.output
    both = _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN, "--resume", "--overwrite")
    assert both.exit_code == 2 and "exclude each other" in both.output


def test_interrupted_pretrain_continues_from_its_work_folder(tmp_path, monkeypatch):
    import lifelong.training.hpsearch as hpsearch
    import lifelong.training.pretrain as pretrain_module

    out = tmp_path / "letters.pt"

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # killed after its trial finished, before the checkpoint was written
        patch.setattr(pretrain_module, "write_torch_file", interrupt)
        stopped = _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN)
    assert stopped.exit_code == 130 and "--resume" in stopped.output
    assert not out.exists() and any((tmp_path / "letters.pt.work").rglob("trial-*"))
    _says_both_flags(_invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN))
    other = _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN, "--seed", "1", "--resume")
    assert other.exit_code == 2 and "other settings (seed differ)" in other.output
    with monkeypatch.context() as patch:  # the finished trial is loaded, not trained again
        patch.setattr(hpsearch, "LocalExecutor", interrupt)
        resumed = _invoke("pretrain", "builtin:letters", "--out", out, *PRETRAIN, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert out.is_file() and not (tmp_path / "letters.pt.work").exists()


def test_a_refused_pretrain_leaves_no_work_folder(tmp_path):
    result = _invoke("pretrain", f"folder:{tmp_path / 'nowhere'}", "--out", tmp_path / "x.pt", *PRETRAIN[:4])
    assert result.exit_code == 2
    assert not (tmp_path / "x.pt.work").exists() and not (tmp_path / "x.pt").exists()


def test_pretrain_ssl_no_longer_resumes_silently(tmp_path, monkeypatch):
    import lifelong.commands.pretraining as pretraining

    out = tmp_path / "enc.pt"
    work = tmp_path / "enc.pt.work"
    real = pretraining.save_encoder

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    with monkeypatch.context() as patch:  # all epochs done and kept in the work folder, the encoder not written
        patch.setattr(pretraining, "save_encoder", interrupt)
        stopped = _invoke("pretrain-ssl", "--out", out, *SSL)
    assert stopped.exit_code == 130 and work.is_dir() and not out.exists(), stopped.output
    _says_both_flags(_invoke("pretrain-ssl", "--out", out, *SSL))  # before: resumed silently
    assert _invoke("pretrain-ssl", "--out", out, *SSL, "--resume").exit_code == 0
    assert out.is_file() and not work.exists() and pretraining.save_encoder is real
    _says_both_flags(_invoke("pretrain-ssl", "--out", out, *SSL))
    finished = _invoke("pretrain-ssl", "--out", out, *SSL, "--resume")
    assert finished.exit_code == 0 and "nothing to resume" in finished.output
    assert _invoke("pretrain-ssl", "--out", out, *SSL, "--overwrite").exit_code == 0 and not work.exists()


def test_transfer_matrix_keeps_its_cells_in_out_work_and_resumes(tmp_path, monkeypatch):
    import lifelong.core.files as files
    import lifelong.training.independent_recipe as tm

    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    out = tmp_path / "tm.json"
    args = ("transfer-matrix", "--stream", manifest, "--epochs", "1", "--out", out)
    real = files.atomic_write_bytes

    def write_nothing_else(path, data):
        if path == out:
            raise KeyboardInterrupt  # every cell finished, the matrix not written yet
        return real(path, data)

    with monkeypatch.context() as patch:
        patch.setattr(files, "atomic_write_bytes", write_nothing_else)
        stopped = _invoke(*args)
    assert stopped.exit_code == 130 and not out.exists()
    assert (tmp_path / "tm.json.work" / "settings.json").is_file() and not (tmp_path / "tm.json.cache").exists()
    _says_both_flags(_invoke(*args))
    with monkeypatch.context() as patch:  # every cell comes from the work folder: nothing is trained again
        patch.setattr(tm, "search", lambda *a, **k: pytest.fail("a finished cell was trained again"))
        resumed = _invoke(*args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(out.read_text())["tasks"] == ["letters", "digits"] and not (tmp_path / "tm.json.work").exists()
    _says_both_flags(_invoke(*args))
    again = _invoke(*args, "--resume")  # finished: the table again, from the file
    assert again.exit_code == 0 and "letters" in again.output
    assert "--cache" not in _invoke("transfer-matrix", "--help").output


def test_facts_split_refuses_an_existing_split(tmp_path):
    facts = tmp_path / "facts.csv"
    facts.write_text("S,P,O\n" + "".join(f"s{i},p,o{i}\n" for i in range(6)))
    out = tmp_path / "split.csv"
    args = ("facts", "split", facts, "--out", out, "--tasks", "2", "--method", "random")
    assert _invoke(*args).exit_code == 0
    first = out.read_text()
    _says_both_flags(_invoke(*args))
    kept = _invoke(*args, "--resume", "--seed", "3")
    assert kept.exit_code == 0 and out.read_text() == first and "nothing to resume" in kept.output
    assert _invoke(*args, "--overwrite", "--seed", "3").exit_code == 0


# ---------------------------------------------------------------------------------------------------------
# --skip-corrupt, --seed


def _folder_with_a_corrupt_image(root):
    for label in ("a", "b"):
        for i in range(6):
            write_png(root / label / f"{i}.png", seed=i + (10 if label == "b" else 0), height=8, width=8)
    return write_corrupt_png(root / "b" / "bad.png")


def test_pretrain_takes_skip_corrupt(tmp_path):
    _folder_with_a_corrupt_image(tmp_path / "images")
    source = f"folder:{tmp_path / 'images'}"
    refused = _invoke("pretrain", source, "--out", tmp_path / "p.pt", "--epochs", "1", "--resolution", "8")
    assert refused.exit_code == 2 and "--skip-corrupt" in refused.output and "skip_corrupt=" not in refused.output
    assert not (tmp_path / "p.pt.work").exists()
    skipped = _invoke(
        "pretrain", source, "--out", tmp_path / "p.pt", "--epochs", "1", "--resolution", "8", "--skip-corrupt"
    )
    assert skipped.exit_code == 0, skipped.output


@pytest.mark.parametrize(
    "command", [("pretrain",), ("pretrain-ssl",), ("transfer-matrix",), ("data", "inspect"), ("run",)]
)
def test_commands_that_load_images_take_skip_corrupt_and_seed(command):
    text = _invoke(*command, "--help").output
    assert "--skip-corrupt" in text
    if command != ("data", "inspect"):
        assert "--seed " in text


# ---------------------------------------------------------------------------------------------------------
# listings and "did you mean"


def test_learners_json_and_one_learners_options():
    listed = json.loads(_invoke("learners", "--json").output)
    assert {"independent", "finetune", "nearest-mean"} <= {row["name"] for row in listed}
    assert all(row["description"] for row in listed)
    options = {row["name"]: row for row in json.loads(_invoke("learners", "independent", "--json").output)["options"]}
    assert options["epochs"]["type"] == "int" and options["epochs"]["default"] == "10"
    assert options["augment"]["type"] == "bool" and options["lr"]["type"] == "float"
    shown = _invoke("learners", "independent")
    assert shown.exit_code == 0 and "epochs: int, default 10" in shown.output


def test_one_streams_options():
    shown = _invoke("streams", "nevis-full")
    assert shown.exit_code == 0
    assert "shuffle_seed: int or null" in shown.output and "meta_test_from_year: int, default 2019" in shown.output
    options = {row["name"] for row in json.loads(_invoke("streams", "clear-mini", "--json").output)["options"]}
    assert {"protocol", "n_per_class", "split_seed"} <= options and "data_root" not in options


@pytest.mark.parametrize(
    "args, says",
    [
        (("learners", "indepndent"), "unknown learner 'indepndent' (did you mean 'independent'?)"),
        (("streams", "nevis-ful"), "unknown stream 'nevis-ful' (did you mean 'nevis-full'?)"),
        (("strems",), "(did you mean 'streams'?)"),
        (("data", "status", "--stream", "nevis-shrt"), "(did you mean 'nevis-short'?)"),
        (("pretrain-ssl", "--out", "x.pt", "-s", "n_per_clas=2"), "(did you mean 'n_per_class'?)"),
    ],
)
def test_unknown_names_get_did_you_mean(args, says, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke(*args)
    assert result.exit_code == 2 and says in result.output, result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------------------------------------------------
# errors in CLI words


def test_a_garbage_npy_never_suggests_allow_pickle(tmp_path):
    from lifelong.data.feature_files import FeatureFileError, load_features

    folder = tmp_path / "features"
    folder.mkdir()
    from lifelong.data import feature_files

    manifest = {"format": feature_files.FORMAT, "complete": True, "rows": 2, "feature_dim": 3}
    (folder / feature_files.MANIFEST_FILE).write_text(json.dumps(manifest))
    np.save(folder / feature_files.FEATURES_FILE, np.array([{"not": "numbers"}], dtype=object), allow_pickle=True)
    np.save(folder / feature_files.LABELS_FILE, np.zeros(2, dtype=np.int64))
    with pytest.raises(FeatureFileError) as caught:
        load_features(folder)
    assert "allow_pickle" not in str(caught.value) and "--overwrite" in str(caught.value)


def test_missing_nevis_data_names_the_data_status_command(tmp_path):
    result = _invoke("run", "--stream", "nevis-tiny", "--data-root", tmp_path, "--out", tmp_path / "runs")
    assert result.exit_code == 2
    assert "lifelong data status --stream nevis-tiny" in result.output and "allow_missing" not in result.output


def test_data_status_says_a_missing_data_root(tmp_path):
    root = tmp_path / "no" / "such" / "root"
    result = _invoke("data", "status", "--stream", "nevis-tiny", "--data-root", root)
    assert result.exit_code == 0
    assert f"data root {root} does not exist; set --data-root or $LIFELONG_DATA" in " ".join(result.output.split())
    assert f"  mnist: {root}/mnist/" in result.output  # whole, on a line of its own


@pytest.mark.parametrize(
    "args, says",
    [
        (("run", "--skip-corupt"), "--skip-corrupt"),
        (("strems",), "did you mean 'streams'?"),
        (("run", "-o", "epochs"), "must look like KEY=VALUE"),
        (("pretrain",), "Missing argument 'SOURCE'"),
    ],
)
def test_usage_errors_share_the_error_style(args, says):
    result = _invoke(*args)
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert any(line.startswith("error: ") for line in lines) and "Error:" not in result.output, result.output
    assert says in result.output
