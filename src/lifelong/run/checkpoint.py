"""Checkpoints of a run: everything needed to continue after the last completed event."""

from __future__ import annotations

import io
import pickle
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifelong.core.files import atomic_write_bytes

FORMAT_VERSION = 1


@dataclass
class Checkpoint:
    """State after `next_event` events: learner state, metric states, records, and what the run was."""

    stream: str
    task_uids: list[str]
    learner: str
    seed: int
    next_event: int = 0
    learner_state: Any = None
    metric_states: list[Any] = field(default_factory=list)
    records: list[dict] = field(default_factory=list)
    version: int = FORMAT_VERSION
    timing: dict = field(default_factory=dict)  # seconds spent on the checkpointed events, over every session


class CheckpointStore:
    """One pickle file, replaced atomically after every event."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def exists(self) -> bool:
        return self.path.exists()

    def save(self, checkpoint: Checkpoint) -> None:
        buffer = io.BytesIO()
        _CpuPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(checkpoint)
        atomic_write_bytes(self.path, buffer.getvalue())

    def load(self) -> Checkpoint:
        try:
            with open(self.path, "rb") as f:
                checkpoint = pickle.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(f"no checkpoint at {self.path}: nothing to resume; run without --resume") from None
        except Exception as exc:  # a checkpoint is written atomically, so this means foreign or damaged file
            raise ValueError(f"checkpoint {self.path} cannot be read ({exc}); delete it to start over") from exc
        if not isinstance(checkpoint, Checkpoint) or checkpoint.version != FORMAT_VERSION:
            raise ValueError(f"{self.path} is not a lifelong checkpoint of format {FORMAT_VERSION}")
        return checkpoint


class _CpuPickler(pickle.Pickler):
    """Pickles torch tensors on an accelerator as plain CPU tensors: a run started on a GPU resumes on a CPU.

    Learners keep their checkpoint state on the CPU already; this is the guarantee for any state that does not.
    Torch is looked up, never imported: a run without it pickles plainly.
    """

    def reducer_override(self, obj: Any) -> Any:
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(obj, torch.Tensor) or obj.device.type == "cpu":
            return NotImplemented
        moved = obj.detach().cpu().as_subclass(torch.Tensor)
        if isinstance(obj, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=obj.requires_grad)
        return moved.__reduce_ex__(pickle.HIGHEST_PROTOCOL)
