"""The fine-tuning options of the learners that fine-tune an encoder (-o finetune, frozen_groups, lr_multipliers,
head_lr_multiplier): a frozen prefix stays bit-identical, a wrong multiplier count is refused before training."""

import pytest
import torch
from _prereq import needs_package
from support import save_tiny_hf_resnet, write_two_task_manifest
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.run.environment import run
from lifelong.suites import get_stream
from lifelong.training.encoders import load_encoder
from lifelong.training.encoders.finetune import layer_groups

needs_transformers = needs_package("transformers", "models")
OPTIONS = ("finetune", "frozen_groups", "lr_multipliers", "head_lr_multiplier")


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _tiny_hf(folder):
    return save_tiny_hf_resnet(folder, side=24)


def _group_keys(encoder):
    """The state_dict keys (parameters and buffers) of each of `encoder`'s layer groups, input side first."""
    names = {id(m): n for n, m in encoder.named_modules()}
    keys = []
    for group in layer_groups(encoder):
        prefixes = [names[id(m)] for m in group.modules]
        keys.append([k for p in prefixes for k in encoder.state_dict() if k.startswith(p + ".")])
    return keys


def _check_first_group_frozen(start, trained, prefix):
    """`trained` (a model state) holds `start`'s first layer group bit-identical and every other group changed."""
    reference = start.state_dict()
    first, *others = _group_keys(start)
    assert first and all(torch.equal(reference[k], trained[prefix + k].cpu()) for k in first)
    for keys in others:
        weights = [k for k in keys if reference[k].is_floating_point() and "running" not in k]
        assert any(not torch.equal(reference[k], trained[prefix + k].cpu()) for k in weights), keys


@needs_transformers
def test_pretrained_partial_fine_tune_keeps_the_frozen_group_bit_identical(tmp_path, monkeypatch):
    from lifelong.learners.pretrained import PretrainedLearner

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    spec = f"hf:{_tiny_hf(tmp_path / 'tiny-resnet')}"
    stream = get_stream(write_two_task_manifest(tmp_path, "pair"))
    learner = PretrainedLearner(encoder=spec, finetune="partial", frozen_groups=1, epochs=1, lr_grid=[0.05])
    state = run(learner, stream, seed=0).learner_state
    _check_first_group_frozen(load_encoder(spec), state["model"], "backbone.")


@needs_transformers
def test_a_wrong_multiplier_count_is_refused_before_any_training(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = _tiny_hf(tmp_path / "tiny-resnet")
    manifest = write_two_task_manifest(tmp_path, "pair")
    out = tmp_path / "runs"
    args = ["run", "--stream", manifest, "--learner", "pretrained", "-o", f"encoder=hf:{model}"]
    ran = invoke(*args, "-o", "frozen_groups=1", "-o", "lr_multipliers=1,2,4,10,20", "--out", out)
    assert ran.exit_code == 2 and "lr_multipliers" in ran.output and "Traceback" not in ran.output, ran.output
    assert not list(out.glob("*/records*")) and not list(out.glob("*/*/records*"))


@pytest.mark.parametrize("learner", ["pretrained", "pretrained+finetune-knn", "fact-finetune"])
def test_learners_list_the_fine_tuning_options(learner):
    listed = invoke("learners", learner)
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    for option in OPTIONS:
        (at,) = [i for i, line in enumerate(lines) if line.startswith(f"  {option}: ")]
        own = lines[at + 1]  # its own help, a sentence
        assert own.startswith("      ") and own.strip()[0].isupper() and "(see" not in own, lines[at : at + 3]
