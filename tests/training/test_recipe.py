"""FitJob: one seeded run of the common recipe per trial; materialize: any dataset into a picklable ArrayDataset."""

import pickle

import numpy as np
import pytest
import torch

from lifelong.core import ArrayDataset, LazyDataset, TaskKey
from lifelong.training.flops import count_training_flops
from lifelong.training.hpsearch import Trial
from lifelong.training.models import make_model
from lifelong.training.recipe import FitJob, materialize

KEY = TaskKey("colours", "multi-class", 3)
COLOURS = np.array([[220, 30, 30], [30, 220, 30], [30, 30, 220]])
TRIAL = Trial(0, 0.05, 0.1)


def _data(n, seed, split="train", key=KEY):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, key.num_classes, n)
    noise = rng.normal(0, 30, (n, 8, 8, 3))
    return ArrayDataset(key, split, np.clip(COLOURS[labels][:, None, None] + noise, 0, 255).astype(np.uint8), labels)


def _job(**options):
    settings = {"epochs": 3, "resolution": None, "seed": 4, **options}
    return FitJob("resnet_mini", 3, KEY.kind, _data(64, 0), _data(48, 1, "dev"), **settings)


def _equal_weights(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_trial_result_reports_best_on_dev_weights_flops_and_curve():
    job = _job()
    result = job(TRIAL)
    assert result.trial == TRIAL
    assert len(result.dev_curve) == 3 and result.dev_error == min(result.dev_curve)
    assert result.steps == 3 * (64 // 16)  # min batch size 16 for 64 images
    per_step = count_training_flops(make_model("resnet_mini", 3), (torch.zeros(16, 3, 8, 8), torch.zeros(16).long()))
    assert result.train_flops == pytest.approx(per_step * result.steps, rel=1e-12)
    model = make_model("resnet_mini", 3)
    model.load_state_dict(result.state_dict)  # a full model's weights, on the CPU
    assert all(v.device.type == "cpu" for v in result.state_dict.values())


def test_same_trial_same_result_anywhere_and_trials_differ():
    job = _job(epochs=1)
    first = job(TRIAL)
    shipped = pickle.loads(pickle.dumps(job))(TRIAL)  # as on an executor's worker
    assert _equal_weights(first.state_dict, shipped.state_dict) and first.dev_curve == shipped.dev_curve
    other_index = job(Trial(1, TRIAL.lr, TRIAL.label_smoothing))  # another trial index: other init and order
    assert not _equal_weights(first.state_dict, other_index.state_dict)


def test_init_backbone_starts_from_given_weights_with_a_fresh_head():
    source = make_model("resnet_mini", 5, seed=123)
    backbone = {k: v.clone() for k, v in source.backbone.state_dict().items()}
    result = _job(epochs=1, init_backbone=backbone)(Trial(0, 1e-9, 0.0))  # lr ~ 0: weights barely move
    conv = "backbone.stem.0.weight"
    assert torch.allclose(result.state_dict[conv], backbone["stem.0.weight"], atol=1e-6)
    assert result.state_dict["head.weight"].shape == (3, 128)
    scratch = _job(epochs=1)(Trial(0, 1e-9, 0.0))
    assert not torch.allclose(scratch.state_dict[conv], backbone["stem.0.weight"], atol=1e-3)
    wrong = make_model("resnet18", 3, seed=0).backbone.state_dict()
    with pytest.raises(ValueError, match="init_backbone does not fit a 'resnet_mini' backbone"):
        _job(init_backbone=wrong)(TRIAL)


def test_no_or_empty_dev_keeps_final_weights():
    for dev in (None, _data(48, 1, "dev").subset(np.arange(0))):
        job = FitJob("resnet_mini", 3, KEY.kind, _data(32, 0), dev, seed=0, epochs=1, resolution=None)
        result = job(TRIAL)
        assert result.dev_error is None and result.dev_curve == () and result.steps == 2


def test_fitjob_validates_its_inputs():
    train = _data(32, 0)
    with pytest.raises(ValueError, match="unknown architecture"):
        FitJob("vgg", 3, KEY.kind, train, None, seed=0, epochs=1)
    with pytest.raises(ValueError, match="job trains a multi-class head with 4 classes"):
        FitJob("resnet_mini", 4, KEY.kind, train, None, seed=0, epochs=1)
    with pytest.raises(TypeError, match="materialize"):
        FitJob("resnet_mini", 3, KEY.kind, LazyDataset(KEY, "train", lambda: train), None, seed=0, epochs=1)
    with pytest.raises(ValueError, match="is empty"):
        FitJob("resnet_mini", 3, KEY.kind, train.subset(np.arange(0)), None, seed=0, epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        FitJob("resnet_mini", 3, KEY.kind, train, None, seed=0, epochs=0)
    with pytest.raises(ValueError, match="min_size"):
        FitJob("resnet_mini", 3, KEY.kind, train, None, seed=0, epochs=1, min_batch_size=64, max_batch_size=32)


class _ListDataset:
    """A minimal third-party Dataset: only the protocol, over plain arrays."""

    def __init__(self, data):
        self.task, self.split, self._data = data.task, data.split, data

    def __len__(self):
        return len(self._data)

    @property
    def image_shape(self):
        return self._data.image_shape

    def batches(self, batch_size, *, shuffle=False, seed=None, drop_last=False):
        return self._data.batches(batch_size, shuffle=shuffle, seed=seed, drop_last=drop_last)

    def labels(self):
        return self._data.labels()


def test_materialize_any_dataset():
    data = _data(20, 3)
    assert materialize(data) is data
    for wrapped in (LazyDataset(KEY, "train", lambda: data), _ListDataset(data)):
        out = materialize(wrapped)
        assert isinstance(out, ArrayDataset) and out.task == KEY and out.split == "train"
        assert np.array_equal(out.images, data.images) and np.array_equal(out.labels(), data.labels())
    with pytest.raises(TypeError, match="expected a Dataset"):
        materialize([1, 2, 3])
