"""The learner protocol: the only contract between a learner and the environment."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources

State = Any  # anything picklable: the environment checkpoints it after every event


@runtime_checkable
class Learner(Protocol):
    """A learner knows nothing of streams or metrics.

    - `init(seed)` returns the initial state; the same seed must give the same results.
    - `train(event, state)` returns the new state and the resources spent (training FLOPs, peak params).
    - `predict(event, state)` returns one row per item of `event.dataset`, in its stored order:
      scores `[N, C]` for multi-class tasks (argmax is the prediction), probabilities in `[0, 1]`, `[N, C]`,
      for multi-label tasks.
    - Optional: `predict_flops(event, state) -> float`, the FLOPs of that prediction (reported apart from
      training FLOPs, which alone count towards cFLOP).
    - Optional: `check_tasks(tasks: Sequence[TaskKey]) -> None`, called once before the first event with the
      stream's task keys; raise ValueError when the learner cannot learn them (a fixed label space, say), so a
      run fails before any training rather than partway.
    """

    name: str

    def init(self, seed: int) -> State: ...

    def train(self, event: TrainEvent, state: State) -> tuple[State, Resources]: ...

    def predict(self, event: PredictEvent, state: State) -> np.ndarray: ...
