"""The fact model on a pretrained trunk (issue 25 part 1): frozen by default (features computed once), or the
authors' Model_2 layout (frozen first stages, shared stages, per-branch copies of the upper stages) with their
learning-rate multipliers; and the options' errors."""

import pytest
import torch
from learners.test_fact_embedding import FAST, make_stream

from lifelong.learners.fact_embedding import EncoderFactModel, FactJointLearner, FactLearner, FactMASLearner
from lifelong.learners.fact_model import AUTHORS_MULTIPLIERS, BranchedFactModel, BranchHeads
from lifelong.run.environment import run
from lifelong.training.encoders import load_encoder, save_encoder, untrained_encoder
from lifelong.training.encoders.stages import encoder_stages


@pytest.fixture
def checkpoint(tmp_path):
    return str(save_encoder(untrained_encoder("resnet18", resolution=16, seed=3), tmp_path / "enc.pt"))


def test_the_default_is_a_frozen_pretrained_trunk_whose_features_train_two_branches():
    learner = FactLearner(**FAST)
    assert learner.config.encoder == "efficientnet-lite0" and learner.config.trunk_frozen
    result = run(learner, make_stream(), seed=0)
    state = result.learner_state
    assert state["input_shape"] == (1280,) and state["resolution"] is None  # features, not images
    model = learner._model(state)
    assert isinstance(model, BranchHeads)
    train = [r for r in result.records if r["split"] == "train"]
    assert all(r["train_steps"] > 0 and r["stopped"] in ("converged", "cap") for r in train)
    assert all(len(r["train_losses"]) >= 1 for r in train)
    predicts = [r for r in result.records if r["split"] != "train"]
    encoder = load_encoder("efficientnet-lite0")
    assert all(r["inference_flops"] > r["num_items"] * 1e6 for r in predicts)  # the trunk's forward is counted
    assert encoder.feature_dim == 1280


def test_the_authors_layout_freezes_the_first_stages_and_copies_the_upper_ones_per_branch(checkpoint):
    learner = FactLearner(encoder=checkpoint, finetune="partial", **FAST)
    assert learner.layout() == (2, 3)  # ResNet: stem, layer1 frozen; layer2 shared; layer3 on per branch
    start = load_encoder(checkpoint)
    model = learner._fact_model(6, (16, 16, 3), 0, 16)
    assert isinstance(model, BranchedFactModel)
    stages = [m for _, m in encoder_stages(start)]
    for mine, theirs in zip([*model.frozen, *model.shared, *model.subject_branch], stages, strict=True):
        assert all(
            torch.equal(a.cpu(), b.cpu())
            for a, b in zip(mine.state_dict().values(), theirs.state_dict().values(), strict=True)
        )
    assert all(not p.requires_grad for p in model.frozen.parameters())
    groups = learner._param_groups(model)
    rates = sorted({round(g["lr"] / FAST["lr"], 6) for g in groups})
    assert rates == sorted({m * b for m in AUTHORS_MULTIPLIERS for b in (1.0, 2.0)})
    biases = {id(p) for name, p in model.named_parameters() if name.endswith(".bias")}
    for group in groups:  # biases: no weight decay, the others the recipe's
        is_bias = {id(p) in biases for p in group["params"]}
        assert len(is_bias) == 1 and (group["weight_decay"] == 0.0) == is_bias.pop()
    frozen_before = {k: v.clone() for k, v in model.frozen.state_dict().items()}
    state = run(learner, make_stream(), seed=0).learner_state
    after = {k[len("frozen.") :]: v for k, v in state["model"].items() if k.startswith("frozen.")}
    assert after and all(torch.equal(frozen_before[k].cpu(), v.cpu()) for k, v in after.items())
    s_copy = {k[len("subject_branch.") :]: v for k, v in state["model"].items() if k.startswith("subject_branch.")}
    po_copy = {k[len("predicate_object_branch.") :]: v for k, v in state["model"].items() if k.startswith("predicate_")}
    assert any(not torch.equal(v, po_copy[k]) for k, v in s_copy.items() if v.is_floating_point())  # trained apart


def test_branch_from_none_shares_the_whole_trunk_and_a_penalty_method_runs(checkpoint):
    learner = FactMASLearner(encoder=checkpoint, finetune="full", branch_from="none", **FAST)
    model = learner._fact_model(6, (16, 16, 3), 0, 16)
    assert isinstance(model, EncoderFactModel) and isinstance(model.head, BranchHeads)
    assert all(p.requires_grad for p in model.parameters())
    assert run(learner, make_stream(), seed=0).summary["fact_bwt"] is not None


def test_joint_is_one_model_on_everything_and_the_small_cnn_is_still_an_option():
    learner = FactJointLearner(**{**FAST, "encoder": "none"})
    assert learner.config.encoder is None and not learner.config.trunk_frozen
    assert run(learner, make_stream(), seed=0).summary["fact_generalized_mean_over_examples"] is not None


def test_bad_trunk_options_are_clear_errors(checkpoint):
    with pytest.raises(ValueError, match="efficientnet-lite0"):
        FactLearner(encoder="efficientnet-lite9")
    with pytest.raises(ValueError, match="give -o encoder only"):
        FactLearner(backbone=checkpoint, encoder=checkpoint)  # the former name and the name of one option
    with pytest.raises(ValueError, match="4 values"):
        FactLearner(encoder=checkpoint, finetune="full", lr_multipliers="1,2")
    with pytest.raises(ValueError, match="stages are stem, layer1, layer2, layer3, layer4"):
        FactLearner(encoder=checkpoint, finetune="full", branch_from="layer9")
    with pytest.raises(ValueError, match="frozen stages are shared"):
        FactLearner(encoder=checkpoint, frozen_groups=4, branch_from="layer2")
    with pytest.raises(ValueError, match="encoder=SPEC"):
        FactLearner(encoder="none", finetune="partial")
