"""Device specs: auto, cpu, cuda, cuda:N; what cannot be honoured is an error saying what the machine has."""

from __future__ import annotations

import pytest
import torch

from lifelong.training.devices import resolve_device


@pytest.mark.parametrize("spec", [None, "auto", " AUTO "])
def test_auto_is_cuda_when_available_else_the_cpu(spec):
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device(spec).type == expected


def test_cpu_and_devices_pass_through():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")


@pytest.mark.parametrize("spec", ["gpu", "cpu:0", "auto:1", "cuda:x", "cuda:", ""])
def test_unknown_specs_name_the_choices(spec):
    with pytest.raises(ValueError, match="auto, cpu, cuda or cuda:N"):
        resolve_device(spec)


def test_cuda_without_a_gpu_is_an_error_not_a_silent_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match="no CUDA GPU"):
        resolve_device("cuda")
    assert resolve_device("auto").type == "cpu"


def test_a_gpu_index_beyond_the_count_names_the_range(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ValueError, match=r"2 CUDA GPU\(s\), cuda:0 to cuda:1"):
        resolve_device("cuda:2")
