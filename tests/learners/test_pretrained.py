"""Pretraining checkpoints and the pretrained learners (PT, PT + FT)."""

import numpy as np
import pytest
import torch

import lifelong.training.independent_recipe as independent
from lifelong.commands.pretraining import pretrain_command
from lifelong.core import ArrayDataset, TaskKey, TrainEvent
from lifelong.learners import make_learner
from lifelong.learners.pretrained import PretrainedFinetuneKnnLearner, PretrainedLearner
from lifelong.testing import check_learner
from lifelong.training.models import count_parameters, make_model
from lifelong.training.pretrain import load_pretrained, pretrain
from lifelong.training.relatedness import RANDOM_INIT

TINY = {"resolution": None, "epochs": 1, "min_batch_size": 16, "max_batch_size": 32}


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """One epoch on a few rendered letters A-J at 16 px."""
    out = tmp_path_factory.mktemp("pretrained") / "letters.pt"
    summary = pretrain_command(
        "builtin:letters", out, epochs=1, resolution=16, seed=0, options={"n_per_class": 12, "size": 16}
    )
    assert summary["path"] == str(out)
    return out


def _event(index, name, seed, n=48):
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    images = rng.integers(0, 256, (n, 8, 8, 3)).astype(np.uint8)
    images[labels == 1, :4] = 255
    key = TaskKey(name, "multi-class", 2)
    data = ArrayDataset(key, "train", images, labels)
    return TrainEvent(2 * index, index, key, data, data.subset(np.arange(16)), data)


def test_checkpoint_holds_the_backbone_and_how_it_was_made(checkpoint):
    loaded = load_pretrained(checkpoint)
    assert loaded.architecture == "resnet_mini" and loaded.source == "builtin:letters"
    assert loaded.class_names == tuple("ABCDEFGHIJ")
    assert loaded.pretraining_flops > 0 and loaded.seed == 0
    assert loaded.backbone.keys() == make_model("resnet_mini", 10).backbone.state_dict().keys()
    assert loaded.details["source_options"] == {"n_per_class": 12, "size": 16}
    assert loaded.details["resolution"] == 16 and loaded.details["epochs"] == 1
    assert sorted(p.name for p in checkpoint.parent.iterdir()) == ["letters.pt"]  # atomic: no temp file left


def test_pretrain_is_deterministic(checkpoint, tmp_path):
    again = pretrain(
        "builtin:letters",
        out=tmp_path / "again.pt",
        epochs=1,
        resolution=16,
        seed=0,
        options={"n_per_class": 12, "size": 16},
    )
    a, b = load_pretrained(checkpoint), load_pretrained(again)
    assert all(torch.equal(a.backbone[k], b.backbone[k]) for k in a.backbone)


def test_pretrain_command_uses_one_thread_whatever_the_machine(checkpoint, tmp_path):
    """The weights must not depend on the core count: `lifelong pretrain` pins torch threads (default 1)."""
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)  # as torch's default would be on a 2-core machine
        pretrain_command(
            "builtin:letters",
            tmp_path / "pinned.pt",
            epochs=1,
            resolution=16,
            seed=0,
            options={"n_per_class": 12, "size": 16},
            show_progress=False,
        )
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(previous)
    a, b = load_pretrained(checkpoint), load_pretrained(tmp_path / "pinned.pt")
    assert b.details["threads"] == 1 == a.details["threads"]
    assert all(torch.equal(a.backbone[k], b.backbone[k]) for k in a.backbone)


def test_learner_starts_every_task_from_the_checkpoint(checkpoint, monkeypatch):
    inits = []
    search = independent.search
    monkeypatch.setattr(
        independent, "search", lambda fit, trials, **kw: inits.append(fit.init_backbone) or search(fit, trials, **kw)
    )
    learner = PretrainedLearner(checkpoint=str(checkpoint), **TINY)
    state = learner.init(0)
    for i in range(2):
        state, resources = learner.train(_event(i, f"t{i}", i), state)
    backbone = load_pretrained(checkpoint).backbone
    assert len(inits) == 2
    assert all(torch.equal(init[k], backbone[k]) for init in inits for k in backbone)
    assert [s["init"] for s in state["selections"]] == ["pretrained", "pretrained"]
    model = make_model("resnet_mini", 2)
    assert resources.peak_parameters == count_parameters(model) + count_parameters(model.backbone)


@pytest.mark.parametrize("cls", [PretrainedLearner, PretrainedFinetuneKnnLearner])
def test_pretraining_flops_count_on_the_first_task_only_when_asked(checkpoint, cls):
    flops = load_pretrained(checkpoint).pretraining_flops
    used = {}
    for counted in (False, True):
        learner = cls(checkpoint=str(checkpoint), count_pretraining_flops=counted, **TINY)
        state = learner.init(0)
        first_state, first = learner.train(_event(0, "a", 0), state)
        _, second = learner.train(_event(1, "b", 1), first_state)
        used[counted] = (first.train_flops, second.train_flops)
    assert used[True][0] == pytest.approx(used[False][0] + flops)
    assert used[True][1] == used[False][1]


def test_pretrained_backbone_is_one_more_knn_candidate(checkpoint):
    learner = PretrainedFinetuneKnnLearner(checkpoint=str(checkpoint), **TINY)
    state, resources = learner.train(_event(0, "a", 0), learner.init(0))
    scores = state["selections"][0]["scores"]
    assert set(scores) == {"pretrained", RANDOM_INIT}
    state, _ = learner.train(_event(1, "b", 1), state)
    assert set(state["selections"][1]["scores"]) == {"task:a", "pretrained", RANDOM_INIT}
    model = make_model("resnet_mini", 2)
    assert resources.peak_parameters == count_parameters(model) + count_parameters(model.backbone)


def test_checkpoint_errors_say_what_to_do(checkpoint, tmp_path):
    with pytest.raises(ValueError, match="need -o checkpoint=PATH"):
        PretrainedLearner()
    with pytest.raises(FileNotFoundError, match="lifelong pretrain"):
        make_learner("pretrained", checkpoint=str(tmp_path / "missing.pt"))
    (tmp_path / "other.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="not a readable pretrained checkpoint"):
        PretrainedLearner(checkpoint=str(tmp_path / "other.pt"))
    torch.save({"weights": 1}, tmp_path / "plain.pt")
    with pytest.raises(ValueError, match="not a lifelong-pretrained-v1 checkpoint"):
        PretrainedLearner(checkpoint=str(tmp_path / "plain.pt"))
    with pytest.raises(ValueError, match="holds a resnet_mini backbone"):
        PretrainedLearner(checkpoint=str(checkpoint), architecture="resnet18")
    assert (
        PretrainedLearner(checkpoint=str(checkpoint), architecture="resnet_mini").config.architecture == "resnet_mini"
    )


@pytest.mark.parametrize("name", ["pretrained", "pretrained+finetune-knn"])
def test_check_learner_passes(checkpoint, name):
    summary = check_learner(make_learner(name, checkpoint=str(checkpoint), **TINY))
    assert summary["cumulative_train_flops"] > 0


def test_pretraining_reports_every_epoch_of_every_trial(tmp_path):
    records = []
    pretrain(
        "builtin:letters",
        out=tmp_path / "p.pt",
        epochs=2,
        resolution=16,
        options={"n_per_class": 8, "size": 16},
        recipe={"trials": 2, "min_batch_size": 16, "max_batch_size": 32},
        progress=records.append,
    )
    assert [r.epoch for r in records] == [1, 2, 1, 2]  # what `lifelong pretrain`'s progress bar counts
