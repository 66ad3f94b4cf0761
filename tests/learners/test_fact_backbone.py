"""The fact learners' `-o backbone=SPEC`: an encoder's weights start the image encoder, fine-tuned with the heads."""

import pytest
import torch
from learners.test_fact_embedding import FAST, make_stream

from lifelong.learners.fact_embedding import EncoderFactModel, FactLearner, FactMASLearner
from lifelong.run.environment import run
from lifelong.training.encoders import load_encoder, save_encoder, untrained_encoder


@pytest.fixture
def checkpoint(tmp_path):
    return str(save_encoder(untrained_encoder("resnet_mini", resolution=12, seed=3), tmp_path / "enc.pt"))


def test_backbone_spec_starts_a_trainable_image_encoder_and_runs(checkpoint):
    learner = FactLearner(backbone=checkpoint, epochs=1, batch_size=16, lr=0.05)
    assert learner.config.resolution == 12  # the encoder's side, not the default 32 px
    stream = make_stream()
    result = run(learner, stream, seed=0)
    assert result.summary["fact_standard_mean_over_tasks"] is not None
    start = load_encoder(checkpoint).state_dict()
    model = learner._fact_model(6, (16, 16, 3), 0)
    assert isinstance(model, EncoderFactModel) and model.backbone.frozen is False
    assert all(torch.equal(start[k].cpu(), v.cpu()) for k, v in model.backbone.state_dict().items())
    assert all(p.requires_grad for p in model.parameters())


def test_explicit_resolution_wins_and_a_penalty_method_runs(checkpoint):
    learner = FactMASLearner(backbone=checkpoint, **FAST)
    assert learner.config.resolution == FAST["resolution"]
    assert run(learner, make_stream(), seed=0).summary["fact_bwt"] is not None


def test_bad_backbone_specs_are_clear_errors(tmp_path, checkpoint):
    with pytest.raises(ValueError, match="efficientnet-lite0"):
        FactLearner(backbone="efficientnet-lite9")
    with pytest.raises(ValueError, match="frozen features"):
        FactLearner(backbone=checkpoint, encoder=checkpoint)
