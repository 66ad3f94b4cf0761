"""Checkpoints are device-independent: tensors on an accelerator are written as CPU tensors."""

from __future__ import annotations

import pytest
import torch

from lifelong.run.checkpoint import Checkpoint, CheckpointStore


class _OnAccelerator(torch.Tensor):
    """A CPU tensor that reports an accelerator device, standing in for a CUDA tensor on a machine without one."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", 0)


def _checkpoint(state: object) -> Checkpoint:
    return Checkpoint(stream="s", task_uids=["a"], learner="l", seed=0, next_event=1, learner_state=state)


def test_accelerator_tensors_come_back_as_cpu_tensors_with_their_values(tmp_path):
    weights = torch.arange(6.0).reshape(2, 3).as_subclass(_OnAccelerator)
    assert weights.device.type == "cuda"
    store = CheckpointStore(tmp_path / "checkpoint.pkl")
    store.save(_checkpoint({"weights": weights, "same": weights, "bias": torch.nn.Parameter(torch.ones(3))}))
    state = store.load().learner_state
    assert type(state["weights"]) is torch.Tensor and state["weights"].device.type == "cpu"
    assert torch.equal(state["weights"], torch.arange(6.0).reshape(2, 3))
    assert state["same"] is state["weights"]  # shared references stay shared
    assert isinstance(state["bias"], torch.nn.Parameter) and state["bias"].requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none")
def test_a_cuda_state_resumes_on_the_cpu(tmp_path):
    model = torch.nn.Linear(3, 2).cuda()
    store = CheckpointStore(tmp_path / "checkpoint.pkl")
    store.save(_checkpoint({"model": model, "state": model.state_dict()}))
    state = store.load().learner_state
    assert all(p.device.type == "cpu" for p in state["model"].parameters())
    assert all(t.device.type == "cpu" for t in state["state"].values())
