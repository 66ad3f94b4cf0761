"""count_training_flops and count_inference_flops against analytic counts; they must leave the model untouched."""

import pytest
import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from lifelong.training import count_training_flops, resnet_mini
from lifelong.training.flops import count_inference_flops


def test_mlp_matches_analytic_count():
    n, d, h, c = 8, 12, 20, 5
    model = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, c))
    x, y = torch.randn(n, d), torch.randint(0, c, (n,))
    # forward: 2ndh + 2nhc; backward: layer 2 weight + input grads (2 x 2nhc), layer 1 weight grad only (2ndh).
    expected = 2 * (2 * n * d * h) + 3 * (2 * n * h * c)
    assert count_training_flops(model, (x, y)) == pytest.approx(expected, rel=0.01)
    assert count_training_flops(model, x) == pytest.approx(expected, rel=0.01)  # the loss adds no counted FLOPs


def test_conv_net_matches_analytic_count():
    n, cin, h, w, c1, c2, k = 4, 3, 8, 8, 6, 10, 7
    model = nn.Sequential(
        nn.Conv2d(cin, c1, 3, padding=1, bias=False),
        nn.ReLU(),
        nn.Conv2d(c1, c2, 3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(c2, k),
    )
    x, y = torch.randn(n, cin, h, w), torch.randint(0, k, (n,))
    f1 = 2 * c1 * h * w * cin * 9 * n  # 2 * Cout * Hout * Wout * Cin * k * k * N
    f2 = 2 * c2 * (h // 2) * (w // 2) * c1 * 9 * n
    fl = 2 * n * c2 * k
    # Backward: the first conv needs only its weight gradient; later layers need weight and input gradients.
    expected = (f1 + f2 + fl) + (f1 + 2 * f2 + 2 * fl)
    assert count_training_flops(model, (x, y)) == pytest.approx(expected, rel=0.01)


def test_multilabel_float_targets_and_frozen_layers():
    model = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Linear(4, 3))
    x, y = torch.randn(5, 6), torch.randint(0, 2, (5, 3)).float()
    full = count_training_flops(model, (x, y))
    for p in model[0].parameters():
        p.requires_grad_(False)
    frozen = count_training_flops(model, (x, y))
    # Frozen first layer: neither its weight gradient nor the gradient w.r.t. its output is computed.
    assert frozen == pytest.approx(full - 2 * 5 * 6 * 4 - 2 * 5 * 4 * 3)
    for p in model.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="requires_grad"):
        count_training_flops(model, x)


def test_resnet_training_step_is_three_forwards_minus_stem_input_grad():
    model = resnet_mini(5, seed=0)
    x = torch.randn(2, 3, 8, 8)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(x)
    forward = counter.get_total_flops()
    stem_input_grad = 2 * 16 * 8 * 8 * 3 * 9 * 2
    assert count_training_flops(model, x) == pytest.approx(3 * forward - stem_input_grad, rel=0.01)


def test_does_not_modify_parameters_buffers_grads_modes_or_rng():
    model = resnet_mini(3, seed=1)
    model.eval()
    model.head.weight.grad = torch.ones_like(model.head.weight)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    batch = (torch.randn(4, 3, 8, 8) * 3 + 1, torch.tensor([0, 1, 2, 0]))
    rng_before = torch.get_rng_state()
    flops = count_training_flops(model, batch)
    assert flops > 0
    after = model.state_dict()
    assert before.keys() == after.keys()
    for key, value in before.items():
        assert torch.equal(value, after[key]), key
    assert not any(m.training for m in model.modules())
    assert torch.equal(model.head.weight.grad, torch.ones_like(model.head.weight))
    assert model.backbone.stem[0].weight.grad is None
    assert torch.equal(torch.get_rng_state(), rng_before)


def test_inference_matches_analytic_forward_count_and_is_linear_in_batch():
    n, d, h, c = 8, 12, 20, 5
    mlp = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, c))
    assert count_inference_flops(mlp, torch.randn(n, d)) == 2 * n * d * h + 2 * n * h * c
    cin, size, c1, k = 3, 8, 6, 7
    conv = nn.Sequential(
        nn.Conv2d(cin, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
    )
    conv.append(nn.Linear(c1, k))
    expected_per_image = 2 * c1 * size * size * cin * 9 + 2 * c1 * k
    assert count_inference_flops(conv, torch.randn(4, cin, size, size)) == 4 * expected_per_image
    assert count_inference_flops(conv, torch.randn(1, cin, size, size)) == expected_per_image


def test_inference_counts_eval_forward_and_leaves_model_untouched():
    model = resnet_mini(3, seed=1)
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    x = torch.randn(2, 3, 8, 8) * 3 + 1
    flops = count_inference_flops(model, x)
    assert all(m.training for m in model.modules())
    for key, value in before.items():  # BatchNorm statistics included
        assert torch.equal(value, model.state_dict()[key]), key
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model.eval()(x)
    assert flops == counter.get_total_flops() > 0
