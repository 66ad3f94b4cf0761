"""Where and how models compute: the device (`auto`, `cpu`, `cuda`, `cuda:N`), the precision and the speed options.

One place for the rule, so every command that takes a device spec reads it the same way, and a spec that cannot be
honoured (CUDA asked for on a machine without it, a GPU index beyond the count, a misspelt name) is an error that
says what the machine has, never a silent fall back to the CPU.

An `Accelerator` holds the *specs* (strings, picklable), resolved where the work runs: a job made on a GPU driver
with `device="auto"` runs on the CPU of a worker without one. Whoever starts the work calls `use_accelerator` once
(the runner, a command, an executor worker); models, batches and autocast then follow `current_accelerator()`.

Defaults keep the CPU path exactly as it was: fp32, no channels_last, no compile. On CUDA the defaults are bf16
autocast, channels_last and TF32 matmuls, with deterministic cuDNN (same seed, same GPU: same numbers). FLOP
counts never depend on any of this (they are counted from shapes).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

import torch
from torch import nn

M = TypeVar("M", bound=nn.Module)
AUTO = "auto"
DEVICE_CHOICES = "auto, cpu, cuda or cuda:N"
PRECISIONS = ("auto", "fp32", "bf16")
# A module with this attribute set (a user's encoder, which may `.view` its activations) keeps the default NCHW
# layout: a model holding one is never converted to channels_last.
KEEPS_LAYOUT = "keeps_memory_format"
_SPEC = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")


def check_device_spec(spec: str | torch.device | None) -> str:
    """`spec` normalised ("auto", "cpu", "cuda", "cuda:N"); a ValueError if it can never name a device."""
    if isinstance(spec, torch.device):
        spec = str(spec)
    text = AUTO if spec is None else str(spec).strip().lower()
    match = _SPEC.match(text)
    if match is None or (match.group(1) != "cuda" and match.group(2) is not None):
        raise ValueError(f"unknown device {spec!r}; give {DEVICE_CHOICES}")
    return text


def resolve_device(spec: str | torch.device | None = AUTO) -> torch.device:
    """The torch device of `spec` (None or "auto": CUDA when available, else the CPU); a ValueError if unusable.

    A GPU always comes back with its index ("cuda" and "auto" mean cuda:0, the first visible GPU): a bare "cuda"
    would mean each thread's current GPU, and the thread that prefetches batches may have another one.
    """
    text = check_device_spec(spec)
    kind, _, index = text.partition(":")
    if kind == AUTO:
        return torch.device("cuda", 0) if torch.cuda.is_available() else torch.device("cpu")
    if kind == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"device {spec!r} asked for CUDA, but torch sees no CUDA GPU here; use cpu or auto")
    count = torch.cuda.device_count()
    if index and int(index) >= count:
        raise ValueError(f"device {spec!r}: this machine has {count} CUDA GPU(s), cuda:0 to cuda:{count - 1}")
    return torch.device("cuda", int(index or 0))


def check_precision(spec: str | None) -> str:
    text = AUTO if spec is None else str(spec).strip().lower()
    if text not in PRECISIONS:
        raise ValueError(f"unknown precision {spec!r}; give {', '.join(PRECISIONS)}")
    return text


@dataclass(frozen=True)
class Accelerator:
    """Device, precision and speed options as specs; `None` options mean "on when the device is CUDA".

    `precision`: "auto" (bf16 autocast on CUDA, fp32 on the CPU), "fp32" or "bf16" (autocast to bfloat16, on any
    device). `channels_last`: NHWC memory format for conv nets. `tf32`: TF32 matmuls and convolutions on CUDA.
    `compile`: run the forward and backward through `torch.compile` (off by default: compiling takes minutes,
    worth it only for long runs).
    """

    device: str = AUTO
    precision: str = AUTO
    channels_last: bool | None = None
    tf32: bool | None = None
    compile: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "device", check_device_spec(self.device))
        object.__setattr__(self, "precision", check_precision(self.precision))

    @property
    def torch_device(self) -> torch.device:
        return resolve_device(self.device)

    @property
    def on_cuda(self) -> bool:
        return self.torch_device.type == "cuda"

    @property
    def resolved_precision(self) -> str:
        """ "fp32" or "bf16": what `precision` means on this machine."""
        if self.precision == AUTO:
            return "bf16" if self.on_cuda else "fp32"
        return self.precision

    @property
    def uses_channels_last(self) -> bool:
        return self.on_cuda if self.channels_last is None else self.channels_last

    @property
    def uses_tf32(self) -> bool:
        return self.on_cuda if self.tf32 is None else self.tf32

    def describe(self) -> dict:
        """The specs and what they resolved to here (for run.json and benchmark output)."""
        device = self.torch_device
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        return {
            **asdict(self),
            "resolved_device": str(device),
            "device_name": name,
            "resolved_precision": self.resolved_precision,
            "channels_last_on": self.uses_channels_last,
            "tf32_on": self.uses_tf32,
        }

    def autocast(self) -> contextlib.AbstractContextManager:
        """bf16 autocast on this device when the precision asks for it, else a no-op."""
        if self.resolved_precision != "bf16":
            return contextlib.nullcontext()
        return torch.autocast(self.torch_device.type, dtype=torch.bfloat16)

    def place(self, model: M) -> M:
        """`model` moved (in place) to the device, in channels_last when that is on (unless a module in it
        `KEEPS_LAYOUT`); returns it."""
        model.to(self.torch_device)
        if self.uses_channels_last and not any(getattr(m, KEEPS_LAYOUT, False) for m in model.modules()):
            model.to(memory_format=torch.channels_last)
        return model

    def batch(self, x: torch.Tensor) -> torch.Tensor:
        """A batch on the device: pinned and copied without blocking on CUDA; channels_last for image batches."""
        device = self.torch_device
        if device.type == "cuda" and x.device.type == "cpu":
            x = x.pin_memory().to(device, non_blocking=True)
        else:
            x = x.to(device)
        if x.dim() == 4 and self.uses_channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return x

    def to(self, t: torch.Tensor) -> torch.Tensor:
        """Any tensor (targets, anchors) on the device, copied without blocking from pinned memory on CUDA."""
        device = self.torch_device
        if device.type == "cuda" and t.device.type == "cpu":
            return t.pin_memory().to(device, non_blocking=True)
        return t.to(device)

    def forward_fn(self, model: nn.Module) -> Callable[..., torch.Tensor]:
        """What to call for the forward pass: `model` itself, or its `torch.compile`d form when compile is on.

        The eager module stays the owner of the weights (state_dict, FLOP counting, checkpoints use it).
        """
        if not self.compile:
            return model
        return torch.compile(model)


_current = Accelerator()
_applied = False  # whether _current's CUDA settings (TF32, deterministic cuDNN, current GPU) are in force


def use_accelerator(accelerator: Accelerator | None = None, **specs: object) -> Accelerator:
    """Make `accelerator` (or one built from `specs`) this process's; checks the device exists; returns it."""
    acc = accelerator if accelerator is not None else Accelerator(**specs)  # type: ignore[arg-type]
    device = acc.torch_device  # raises for a device this machine lacks
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = acc.uses_tf32
        torch.backends.cudnn.allow_tf32 = acc.uses_tf32
        # Same seed, same device, same numbers (a resumed run must match an uninterrupted one): deterministic
        # cuDNN algorithms, no autotuning; cuBLAS with a fixed workspace (read when cuBLAS starts).
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.cuda.set_device(device)  # this thread's current GPU too (leaving a scope restores it)
    global _current, _applied
    _current, _applied = acc, True
    return acc


def current_accelerator() -> Accelerator:
    """This process's accelerator (default: `Accelerator()`, i.e. CUDA with bf16 when present, else fp32 CPU).

    A process that never chose one (a library user calling train_model) gets the default with its settings applied.
    """
    if not _applied:
        use_accelerator(_current)
    return _current


def current_device() -> torch.device:
    return current_accelerator().torch_device


@contextlib.contextmanager
def accelerator_scope(accelerator: Accelerator) -> Iterator[Accelerator]:
    """Use `accelerator` inside the block, then restore the one before (tests, benchmarks comparing devices)."""
    before = current_accelerator()
    try:
        yield use_accelerator(accelerator)
    finally:
        use_accelerator(before)


@contextlib.contextmanager
def seeded_torch_rng(seed: int) -> Iterator[None]:
    """Inside the block, torch's global RNG (and the current CUDA device's) is seeded from `seed`; restored after.

    Networks draw from the global RNG (dropout, drop-connect), which torch seeds anew in every process: one seed per
    training run makes the same command give the same weights.
    """
    acc = current_accelerator()
    with torch.random.fork_rng(devices=[acc.torch_device] if acc.on_cuda else []):
        torch.manual_seed(int(seed))
        yield


def device_for(spec: str | torch.device | None = None) -> torch.device:
    """The device of an explicit `spec` (see `resolve_device`); None: the current accelerator's."""
    return current_device() if spec is None else resolve_device(spec)


def cpu_tensors(value: Any) -> Any:
    """`value` with every tensor in it (nested dicts, lists, tuples) copied to the CPU: state that loads anywhere.

    Dicts come back as plain dicts (a state_dict loads from one).
    """
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {k: cpu_tensors(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [cpu_tensors(v) for v in value] if isinstance(value, list) else tuple(cpu_tensors(v) for v in value)
    return value


class DeviceCopies:
    """Named tensors (anchors, targets) kept as given, copied once to each device they are used on.

    `on(device)` gives the copies (the tensors themselves where they already are); pickling keeps only the originals.
    """

    def __init__(self, tensors: Mapping[str, torch.Tensor]) -> None:
        self.tensors = dict(tensors)
        self._copies: dict[torch.device, dict[str, torch.Tensor]] = {}

    def on(self, device: torch.device) -> dict[str, torch.Tensor]:
        if device not in self._copies:
            self._copies[device] = {k: v.to(device) for k, v in self.tensors.items()}
        return self._copies[device]

    def __getstate__(self) -> dict:
        return {"tensors": self.tensors, "_copies": {}}


def available_devices() -> list[str]:
    """ "cpu", plus "cuda" when torch sees a GPU: what device-parametrised tests and benchmarks iterate over."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


__all__ = [
    "KEEPS_LAYOUT",
    "AUTO",
    "DEVICE_CHOICES",
    "PRECISIONS",
    "Accelerator",
    "accelerator_scope",
    "available_devices",
    "check_device_spec",
    "DeviceCopies",
    "check_precision",
    "cpu_tensors",
    "current_accelerator",
    "current_device",
    "device_for",
    "resolve_device",
    "use_accelerator",
]
