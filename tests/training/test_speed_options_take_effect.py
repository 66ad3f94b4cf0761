"""Each speed option does what it says in the real loops, seen from inside them: not only "the numbers stay close".

bf16: the layers compute in bfloat16 under autocast. channels_last: weights and input batches in NHWC memory.
compile: torch.compile's own counters show a compiled graph. Prefetch: batches made on the prefetch thread, ahead
of the step that uses them.
"""

from __future__ import annotations

import os
import shutil
import threading

import numpy as np
import pytest
import torch
from _prereq import needs
from torch import nn
from training.test_loop import _bars, _model

import lifelong.training.loop as loop
from lifelong.training.continual_loop import predict_items, train_continual
from lifelong.training.devices import Accelerator, accelerator_scope
from lifelong.training.loop import PREFETCH_BATCHES, predict_scores, train_model

TRAIN = dict(kind="multi-class", batch_size=16, lr=0.1, seed=0)


def _train_model(model: nn.Module) -> int:
    return train_model(model, _bars(48, 1), None, steps=3, **TRAIN).steps


def _predict_scores(model: nn.Module) -> int:
    predict_scores(model, _bars(20, 2), "multi-class", batch_size=8)
    return 3


def _train_continual(model: nn.Module) -> int:
    data = _bars(48, 1)
    fit = train_continual(model, data.images, data.labels(), epochs=1, batch_size=16, lr=0.1, weight_decay=0, seed=0)
    return fit.steps


def _predict_items(model: nn.Module) -> int:
    predict_items(model, _bars(20, 2).images, batch_size=8)
    return 3


# Each loop, run on a model: the forward passes it made. A training loop first counts one step's FLOPs on the eager
# model (outside autocast, on purpose: FLOPs never depend on the options), then trains.
LOOPS = {"train_model": _train_model, "train_continual": _train_continual}
PREDICTS = {"predict_scores": _predict_scores, "predict_items": _predict_items}


def _record(module: nn.Module, seen: list, what) -> None:
    """Append what(inputs, output) to `seen` at every forward of `module`."""
    module.register_forward_hook(lambda _, inputs, output: seen.append(what(inputs[0], output)))


def _run(loop_fn, accelerator: Accelerator, what) -> tuple[nn.Module, list, int]:
    """(the model, what its first conv saw at each forward, the loop's own forward passes) under `accelerator`."""
    model, seen = _model(), []
    _record(model.backbone.stem[0], seen, what)
    with accelerator_scope(accelerator):
        passes = loop_fn(model)
    return model, seen, passes


def _output_dtype(x: torch.Tensor, out: torch.Tensor) -> torch.dtype:
    return out.dtype


@pytest.mark.parametrize("loop_fn", LOOPS.values(), ids=LOOPS.keys())
def test_bf16_training_steps_compute_in_bfloat16(loop_fn):
    _, seen, steps = _run(loop_fn, Accelerator(device="cpu", precision="bf16"), _output_dtype)
    assert seen == [torch.float32] + [torch.bfloat16] * steps  # the FLOP count, then every step under autocast


@pytest.mark.parametrize("loop_fn", PREDICTS.values(), ids=PREDICTS.keys())
def test_bf16_prediction_computes_in_bfloat16(loop_fn):
    _, seen, batches = _run(loop_fn, Accelerator(device="cpu", precision="bf16"), _output_dtype)
    assert seen == [torch.bfloat16] * batches


def _nhwc(t: torch.Tensor) -> bool:
    return t.is_contiguous(memory_format=torch.channels_last)


def _nhwc_batch(x: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether the input batch is channels_last (3 channels and 8x8: NCHW memory would not pass for it)."""
    return x.shape[1] > 1 and _nhwc(x)


@pytest.mark.parametrize("loop_fn", {**LOOPS, **PREDICTS}.values(), ids={**LOOPS, **PREDICTS}.keys())
def test_channels_last_lays_out_weights_and_batches_in_nhwc(loop_fn):
    model, seen, passes = _run(loop_fn, Accelerator(device="cpu", channels_last=True), _nhwc_batch)
    assert len(seen) >= passes and all(seen)  # every batch, the one the FLOPs are counted on too
    convs = [p for p in model.parameters() if p.dim() == 4]
    assert convs and all(_nhwc(p) for p in convs)


class _Tiny(nn.Module):
    """A conv and a linear layer: compiles in seconds on the CPU."""

    in_channels = 3

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.conv(x)).mean((2, 3)))


def _has_cpp_compiler() -> bool:
    """Inductor builds its CPU kernels with the C++ compiler in $CXX (default g++)."""
    return shutil.which(os.environ.get("CXX") or "g++") is not None


@needs(_has_cpp_compiler(), "torch.compile on the CPU needs a C++ compiler: apt-get install g++ (or set $CXX)")
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated")  # raised inside torch's compiler
def test_compile_trains_through_a_compiled_graph_and_matches_eager(monkeypatch):
    # inductor imports setuptools; where an earlier test imported the standard library's distutils, setuptools'
    # distutils shim then refuses (AssertionError in _distutils_hack): keep the standard library's
    monkeypatch.setenv("SETUPTOOLS_USE_DISTUTILS", "stdlib")
    counters = torch._dynamo.utils.counters
    torch._dynamo.reset()
    counters.clear()
    eager_model, compiled_model = _Tiny(), _Tiny()
    eager = train_model(eager_model, _bars(32, 1), None, steps=2, **TRAIN)
    assert not counters["stats"]["unique_graphs"]  # nothing compiled without the option
    with accelerator_scope(Accelerator(device="cpu", compile=True)):
        compiled = train_model(compiled_model, _bars(32, 1), None, steps=2, **TRAIN)
    assert counters["stats"]["unique_graphs"] >= 1 and counters["frames"]["ok"] >= 1
    assert counters["aot_autograd"]["ok"] >= 1  # the backward pass was compiled too
    assert compiled.flops_per_step == eager.flops_per_step and compiled.train_flops == eager.train_flops
    for name, value in eager.state_dict.items():
        torch.testing.assert_close(compiled.state_dict[name], value, atol=1e-5, rtol=1e-4)


def test_prefetch_makes_training_batches_ahead_on_its_thread(monkeypatch):
    """The GPU path's prefetching, run on the CPU by letting the accelerator report a GPU (batches stay on the CPU)."""
    made_on: list[str] = []  # the thread that made each training batch
    queue_filled = threading.Event()  # the first batch and PREFETCH_BATCHES more are made
    ahead: list[int] = []  # batches made when the first forward pass went on
    prepare = loop.prepare_batch

    def recorded_prepare(*args, **kwargs):
        batch = prepare(*args, **kwargs)
        made_on.append(threading.current_thread().name)
        if len(made_on) == 1 + PREFETCH_BATCHES:
            queue_filled.set()
        return batch

    def first_forward(*_) -> None:
        if not ahead:
            queue_filled.wait(timeout=30)  # a safety net: made in line, no batch is made while this step runs
            ahead.append(len(made_on))

    monkeypatch.setattr(loop, "prepare_batch", recorded_prepare)
    monkeypatch.setattr(Accelerator, "on_cuda", property(lambda self: True))
    model = _model()
    model.register_forward_pre_hook(first_forward)
    with accelerator_scope(Accelerator(device="cpu", precision="fp32", channels_last=False)):
        result = train_model(model, _bars(96, 1), None, steps=5, **TRAIN)
    assert result.steps == 5 and made_on == ["lifelong-prefetch"] * 5
    # while the first batch was in use, the queue filled (and the producer may have made one more, waiting to put it)
    assert len(ahead) == 1 and 1 + PREFETCH_BATCHES <= ahead[0] <= 2 + PREFETCH_BATCHES
    assert np.isfinite(result.history[-1].train_loss)
