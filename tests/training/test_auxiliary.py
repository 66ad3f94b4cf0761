"""Multitask training (lifelong.training.auxiliary through train_model): one step against a hand computation of
loss = L_current + lambda * sum_k L_k on a tiny network, BatchNorm statistics from the current batch only, the
auxiliary heads discarded, and the auxiliary FLOPs counted."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lifelong.core import ArrayDataset, TaskKey
from lifelong.core.seeds import derive_seed
from lifelong.training.auxiliary import AuxiliaryTask, batchnorm_statistics_kept
from lifelong.training.flops import count_training_flops
from lifelong.training.loop import train_model
from lifelong.training.models import make_model

SEED, LR, SMOOTHING, WEIGHT = 7, 0.1, 0.1, 0.3


def _data(name, kind, classes, n, seed):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8)
    labels = rng.integers(0, 2, (n, classes)) if kind == "multi-label" else np.arange(n) % classes
    return ArrayDataset(TaskKey(name, kind, classes), "train", images, labels)


CURRENT = _data("current", "multi-class", 3, 8, 0)
AUX = (_data("aux-a", "multi-class", 2, 6, 1), _data("aux-b", "multi-label", 4, 5, 2))


def _inputs(data):
    """The model input of every item (no augmentation, native size): uint8 NHWC -> [-1, 1] NCHW."""
    return torch.from_numpy(data.images).permute(0, 3, 1, 2).float() / 127.5 - 1.0


def _one_step(model, auxiliary, weight=WEIGHT):
    return train_model(
        model,
        CURRENT,
        None,
        kind="multi-class",
        steps=1,
        batch_size=8,  # every item in one batch: a full batch of each auxiliary task too (6 and 5 items)
        lr=LR,
        label_smoothing=SMOOTHING,
        weight_decay=0.0,
        momentum=0.0,
        warmup_epochs=0.0,
        seed=SEED,
        augment=False,
        auxiliary=auxiliary,
        aux_weight=weight,
    )


def _hand_heads(model):
    """The documented initialisation of auxiliary head k: uniform(+-1/sqrt(D)) from derive_seed(seed, 11, k)."""
    heads = []
    for k, data in enumerate(AUX):
        gen = torch.Generator().manual_seed(derive_seed(SEED, 11, k))
        head = nn.Linear(model.head.in_features, data.task.num_classes)
        bound = head.in_features**-0.5
        with torch.no_grad():
            head.weight.uniform_(-bound, bound, generator=gen)
            head.bias.uniform_(-bound, bound, generator=gen)
        heads.append(head)
    return heads


def test_one_step_is_sgd_on_the_current_loss_plus_lambda_times_the_auxiliary_losses():
    model = make_model("resnet_mini", 3, seed=0)
    hand = copy.deepcopy(model)
    _one_step(model, tuple(AuxiliaryTask(d) for d in AUX))

    hand.train()
    current = F.cross_entropy(hand(_inputs(CURRENT)), torch.from_numpy(CURRENT.labels()), label_smoothing=SMOOTHING)
    statistics = {k: v.clone() for k, v in hand.state_dict().items() if "running" in k}  # after the current batch
    a, b = _hand_heads(hand)
    loss_a = F.cross_entropy(
        a(hand.backbone(_inputs(AUX[0]))), torch.from_numpy(AUX[0].labels()), label_smoothing=SMOOTHING
    )
    targets_b = torch.from_numpy(AUX[1].labels()).float() * (1 - SMOOTHING) + SMOOTHING / 2
    loss_b = F.binary_cross_entropy_with_logits(b(hand.backbone(_inputs(AUX[1]))), targets_b)
    (current + WEIGHT * (loss_a + loss_b)).backward()
    trained = model.state_dict()
    for name, parameter in hand.named_parameters():
        torch.testing.assert_close(trained[name], parameter.detach() - LR * parameter.grad, rtol=1e-5, atol=1e-6)
    for name, value in statistics.items():  # the auxiliary batches left BatchNorm's running statistics alone
        torch.testing.assert_close(trained[name], value, rtol=1e-6, atol=1e-7)
    assert trained.keys() == hand.state_dict().keys()  # the auxiliary heads are not part of the model kept


def test_lambda_zero_gives_the_plain_step_and_lambda_changes_the_backbone_only_through_aux_gradients():
    plain, zero, weighted = (make_model("resnet_mini", 3, seed=0) for _ in range(3))
    _one_step(plain, ())
    _one_step(zero, tuple(AuxiliaryTask(d) for d in AUX), weight=0.0)
    _one_step(weighted, tuple(AuxiliaryTask(d) for d in AUX))
    for name, value in plain.state_dict().items():
        torch.testing.assert_close(zero.state_dict()[name], value, rtol=0, atol=1e-7)
    assert not torch.allclose(weighted.backbone.stem[0].weight, plain.backbone.stem[0].weight)
    torch.testing.assert_close(weighted.head.weight, plain.head.weight, rtol=1e-5, atol=1e-7)  # its own loss only


def test_every_auxiliary_forward_and_backward_counts_in_the_step_flops():
    plain = _one_step(make_model("resnet_mini", 3, seed=0), ())
    multi = _one_step(make_model("resnet_mini", 3, seed=0), tuple(AuxiliaryTask(d) for d in AUX))
    backbone = make_model("resnet_mini", 3, seed=0).backbone
    extra = 0.0
    for data in AUX:
        net = nn.Sequential(backbone, nn.Linear(backbone.out_features, data.task.num_classes))
        targets = torch.from_numpy(data.labels())
        targets = targets.float() if data.task.kind.value == "multi-label" else targets
        extra += count_training_flops(net, (_inputs(data), targets))
    assert multi.train_flops == pytest.approx(plain.train_flops + extra, rel=1e-9)
    assert extra > 0


def test_batchnorm_statistics_are_restored_after_the_block():
    model = make_model("resnet_mini", 2, seed=0).train()
    before = {k: v.clone() for k, v in model.state_dict().items() if "running" in k or "num_batches" in k}
    with batchnorm_statistics_kept(model):
        model(_inputs(CURRENT)).sum().backward()
        assert any(not torch.equal(model.state_dict()[k], v) for k, v in before.items())
    assert all(torch.equal(model.state_dict()[k], v) for k, v in before.items())


def test_an_empty_auxiliary_task_is_refused():
    empty = ArrayDataset(TaskKey("none", "multi-class", 2), "train", np.zeros((0, 8, 8, 3), np.uint8), np.zeros(0))
    with pytest.raises(ValueError, match="no training items"):
        AuxiliaryTask(empty)
