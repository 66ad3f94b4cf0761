"""Low-resolution ResNets: shapes, parameter counts, backbone/head split, seeded initialisation."""

import pytest
import torch

from lifelong.training import count_parameters, make_model, resnet, resnet18, resnet34, resnet_mini


@pytest.mark.parametrize("side", [8, 28, 32, 64])
def test_output_shapes(side):
    model = resnet_mini(7, seed=0).eval()
    with torch.no_grad():
        x = torch.randn(2, 3, side, side)
        assert model(x).shape == (2, 7)
        assert model.features(x).shape == (2, model.backbone.out_features) == (2, 128)


def test_resnet18_matches_the_cifar_parameter_count():
    model = resnet18(10)
    assert count_parameters(model) == 11_173_962
    assert count_parameters(model.backbone) == 11_173_962 - (512 * 10 + 10)
    assert model.head.in_features == 512


def test_resnet34_shape_and_size():
    model = resnet34(10)
    assert [len(stage) for stage in model.backbone.stages] == [3, 4, 6, 3]
    assert count_parameters(model) == 21_282_122


def test_grayscale_models_and_head_swap():
    model = resnet(3, blocks=(1, 1), widths=(4, 8), in_channels=1, seed=0)
    assert model(torch.randn(2, 1, 9, 9)).shape == (2, 3)
    model.head = torch.nn.Linear(model.backbone.out_features, 11)
    assert model(torch.randn(2, 1, 9, 9)).shape == (2, 11)


def test_seeded_initialisation_is_reproducible():
    a, b, c = resnet_mini(4, seed=5), resnet_mini(4, seed=5), resnet_mini(4, seed=6)
    for name, value in a.state_dict().items():
        assert torch.equal(value, b.state_dict()[name]), name
    assert not torch.equal(a.head.weight, c.head.weight)
    assert not torch.equal(a.backbone.stem[0].weight, c.backbone.stem[0].weight)


def test_bad_configurations_are_explained():
    with pytest.raises(ValueError, match="equal length"):
        resnet(2, blocks=(1, 1), widths=(4,))
    with pytest.raises(ValueError, match="unknown architecture 'resnet9'"):
        make_model("resnet9", 2)
