"""The pretrained learners over any encoder spec (`-o encoder=SPEC`): hf: folders, toolkit encoder checkpoints,
model names; pretraining FLOPs charged only when asked."""

import pytest
from _prereq import import_or_missing, needs_package
from support import save_tiny_hf_resnet
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.results.store import RunFolder
from lifelong.training.encoders import save_encoder, untrained_encoder

needs_transformers = needs_package("transformers", "models")
TWO_TASKS = """
name: pair
tasks:
  - {name: letters, source: "builtin:letters", year: 2001, resolution: 16, options: {n_per_class: 12, size: 16}}
  - {name: digits, source: "builtin:digits", year: 2002, resolution: 16, options: {n_per_class: 12}}
"""


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _tiny_hf(folder):
    return save_tiny_hf_resnet(folder, side=24)


def _train_records(folder):
    return [r for r in RunFolder(folder).read_records() if r["type"] == "train"]


@needs_transformers
@pytest.mark.parametrize("learner", ["pretrained", "pretrained+finetune-knn"])
def test_pretrained_learners_fine_tune_an_hf_encoder(tmp_path, monkeypatch, learner):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = _tiny_hf(tmp_path / "tiny-resnet")
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    ran = invoke(
        "run",
        "--stream",
        manifest,
        "--learner",
        learner,
        "-o",
        f"encoder=hf:{model}",
        "-o",
        "epochs=1",
        "--out",
        tmp_path / "runs",
    )
    assert ran.exit_code == 0, ran.output
    (folder,) = (tmp_path / "runs").glob("pair-*-seed0")
    records = RunFolder(folder).read_records()
    assert len(records) == 4 and all(r["inference_flops"] > 0 for r in records if r["type"] == "predict")


def test_encoder_checkpoint_keeps_its_architecture_and_charges_its_flops_only_when_asked(tmp_path):
    ckpt = untrained_encoder("resnet_mini", resolution=16, seed=0)
    ckpt.train_flops = 1e12
    path = save_encoder(ckpt, tmp_path / "enc.pt")
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    common = ["--stream", manifest, "--learner", "pretrained", "-o", f"encoder={path}", "-o", "epochs=1"]
    common += ["-o", "resolution=16"]
    plain = invoke("run", *common, "--out", tmp_path / "a")
    charged = invoke("run", *common, "-o", "count_pretraining_flops=true", "--out", tmp_path / "b")
    assert plain.exit_code == 0 and charged.exit_code == 0, plain.output + charged.output
    (a,) = (tmp_path / "a").glob("pair-*-seed0")
    (b,) = (tmp_path / "b").glob("pair-*-seed0")
    first_a, second_a = (r["train_flops"] for r in _train_records(a))
    first_b, second_b = (r["train_flops"] for r in _train_records(b))
    assert first_b - first_a == pytest.approx(1e12, rel=1e-6) and second_b == pytest.approx(second_a)


def test_checkpoint_and_encoder_together_or_an_unknown_name_are_clear_errors(tmp_path):
    manifest = tmp_path / "pair.yaml"
    manifest.write_text(TWO_TASKS)
    both = invoke(
        "run",
        "--stream",
        manifest,
        "--learner",
        "pretrained",
        "-o",
        "encoder=x",
        "-o",
        "checkpoint=y",
        "--out",
        tmp_path / "r",
    )
    assert both.exit_code == 2 and "not both" in both.output
    unknown = invoke(
        "run",
        "--stream",
        manifest,
        "--learner",
        "pretrained",
        "-o",
        "encoder=efficientnet-lite9",
        "--out",
        tmp_path,
    )
    assert unknown.exit_code == 2 and "efficientnet-lite0" in unknown.output and "Traceback" not in unknown.output


def test_registered_efficientnet_charges_its_imagenet_pretraining_estimate():
    import_or_missing("efficientnet_lite_pytorch", "models")
    from lifelong.learners.pretrained import PretrainedLearner

    learner = PretrainedLearner(encoder="efficientnet-lite0", resolution=32)
    assert learner.config.architecture == "encoder:efficientnet-lite0@32" and learner.config.resolution == 32
    assert learner.checkpoint.pretraining_flops == pytest.approx(3 * 767_815_104 * 1_281_167 * 350)
    with pytest.raises(ValueError, match="executor=ray"):
        PretrainedLearner(encoder="efficientnet-lite0", executor="ray")
