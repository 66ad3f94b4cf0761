"""ExpertGate on the fact model (Aljundi et al. 2017; docs/protocols/facts.md#methods): one expert per task.

Per task an undercomplete autoencoder (the gate) learns the task's training images; the task's expert starts from
the most related earlier expert (relatedness from the earlier gates' reconstruction errors on the new task's
training data) and fine-tunes on the task with the fact learners' recipe (FactLearner.train). At test time each
image goes to the expert whose gate reconstructs it best, which scores it against every fact of the stream.

Gate features: the paper feeds the gates conv features of an ImageNet-pretrained AlexNet. Here they are the
pretrained trunk's features (`encoder`, the fact model's default: efficientnet-lite0; with a frozen trunk the very
features the experts train on), or a `gate_encoder`'s (a second encoder spec, for the gates only, while the experts
train the trunk); only without a pretrained trunk (`-o encoder=none`) the images centre-resized to
`gate_resolution` pixels and flattened. Each gate standardises them with its own task's mean and standard
deviation and squashes them with a sigmoid (inputs in (0, 1), as in the paper).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.resources import Resources
from lifelong.learners.fact_embedding import FactConfig, FactLearner, cosine_scores, fact_space
from lifelong.training import encoders
from lifelong.training.continual_loop import model_inputs, predict_items
from lifelong.training.devices import cpu_tensors, current_accelerator
from lifelong.training.flops import count_training_flops
from lifelong.training.loop import derive_seed
from lifelong.training.models import count_parameters, initialise
from lifelong.training.recipe import materialize

_GATE = 21  # derive_seed tag of the gates' initialisation and batch order (the continual learners use 1-3)
STD_FLOOR = 1e-3  # a feature (nearly) constant over a task's images still standardises to finite values


@dataclass(frozen=True)
class FactExpertGateConfig(FactConfig):
    """The fact learners' options for each expert, plus the gates' (one autoencoder per task)."""

    gate_hidden: int = 100
    """The code width of each task's gate, an undercomplete autoencoder (the paper: 100)."""
    gate_epochs: int = 40
    """Epochs of each gate's training."""
    gate_lr: float = 1e-3
    """The gates' learning rate (Adam)."""
    gate_batch_size: int = 64
    """Items per step of a gate's training."""
    gate_resolution: int = 16
    """With encoder=none and no gate_encoder, the side in pixels the gates' images are downsampled to."""
    gate_encoder: str | None = None
    """An encoder spec for the gates' features only, a second encoder beside the experts' trunk, with encoder=none
    or a fine-tuned trunk (unset: the trunk's features, or downsampled pixels without a trunk)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("gate_hidden", "gate_epochs", "gate_batch_size", "gate_resolution"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.gate_lr > 0:
            raise ValueError(f"gate_lr must be > 0, got {self.gate_lr}")
        if self.penalty != "none" or self.joint or self.train_on != "bucket" or self.init != "previous":
            raise ValueError(
                "ExpertGate fine-tunes one expert per task from the most related one: leave penalty ('none'), joint "
                f"(false), train_on ('bucket') and init ('previous'); got penalty={self.penalty!r}, "
                f"joint={self.joint}, train_on={self.train_on!r}, init={self.init!r}"
            )
        if self.gate_encoder is not None:
            if self.linear or self.trunk_frozen:
                raise ValueError(
                    "gate_encoder needs images, but with a frozen trunk (or -o encoder=features) the experts and "
                    "gates see features: leave gate_encoder out, or give -o finetune=partial|full or -o encoder=none"
                )
            encoders.check_encoder_spec(self.gate_encoder)


class Autoencoder(nn.Module):
    """The gate: linear encoding to `hidden` units with a ReLU, linear decoding with a sigmoid."""

    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(hidden, dim), nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.encoder(x))


def _gate_inputs(gate: dict[str, Any], features: np.ndarray) -> torch.Tensor:
    """sigmoid((features - the gate task's mean) / its standard deviation)."""
    return torch.sigmoid(torch.from_numpy((np.asarray(features, np.float32) - gate["mean"]) / gate["std"]))


def _autoencoder(gate: dict[str, Any]) -> Autoencoder:
    """The gate's autoencoder (weights kept on the CPU) on the current accelerator, in eval mode."""
    weights = gate["weights"]
    model = Autoencoder(weights["encoder.0.weight"].shape[1], weights["encoder.0.weight"].shape[0])
    model.load_state_dict(weights)
    return current_accelerator().place(model).eval()


def train_gate(
    features: np.ndarray, hidden: int, epochs: int, lr: float, batch_size: int, seed: int
) -> tuple[dict[str, Any], float]:
    """(gate: autoencoder weights (CPU) and the standardisation, FLOPs) fit with Adam on the mean squared error, on
    the current accelerator."""
    features = np.asarray(features, dtype=np.float32)
    mean = features.mean(0)
    gate: dict[str, Any] = {"mean": mean, "std": np.maximum(features.std(0), STD_FLOOR), "weights": None}
    acc = current_accelerator()
    x = acc.to(_gate_inputs(gate, features))
    model = acc.place(initialise(Autoencoder(x.shape[1], hidden), seed))
    forward = acc.forward_fn(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    batch = min(batch_size, len(x))
    loss_fn = nn.functional.mse_loss
    flops_per_step = count_training_flops(model, (x[:batch], x[:batch]), loss_fn=loss_fn)
    rng, steps = np.random.default_rng(derive_seed(seed, _GATE)), 0
    for _ in range(epochs):
        order = acc.to(torch.from_numpy(rng.permutation(len(x))))
        for start in range(0, len(x) - batch + 1, batch):  # full batches only: FLOPs are exact
            xb = x[order[start : start + batch]]
            with acc.autocast():
                loss = loss_fn(forward(xb).float(), xb)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            steps += 1
    gate["weights"] = cpu_tensors(model.state_dict())
    return gate, flops_per_step * steps


@torch.no_grad()
def gate_errors(gate: dict[str, Any], features: np.ndarray) -> np.ndarray:
    """Per item, the gate's mean squared reconstruction error [N] (float64)."""
    acc = current_accelerator()
    x = acc.to(_gate_inputs(gate, features))
    with acc.autocast():
        reconstruction = _autoencoder(gate)(x).float()
    return ((reconstruction - x) ** 2).mean(1).double().cpu().numpy()


def relatedness(errors: np.ndarray, own: float) -> np.ndarray:
    """The paper's Rel_k = 1 - (Er_k - Er_t) / Er_t: earlier gates' mean errors Er_k on the new task's training
    data against the new task's own gate error Er_t (1: as good as the task's own gate)."""
    if not own > 0:
        raise ValueError(f"the new task's own gate error must be > 0, got {own}")
    return 1.0 - (np.asarray(errors, dtype=np.float64) - own) / own


def _gate_size(gate: dict[str, Any]) -> int:
    return sum(v.numel() for v in gate["weights"].values()) + gate["mean"].size + gate["std"].size


class FactExpertGateLearner(FactLearner):
    """ExpertGate: a fact expert and an autoencoder gate per task; each image goes to its best-reconstructing gate.

    The state keeps every expert's weights (`experts`), every gate (`gates`: autoencoder weights, mean, std), each
    task's chosen parent expert (`parents`, None for the first) and relatedness values, all plain CPU tensors/arrays.
    """

    name = "fact-expertgate"
    config_class = FactExpertGateConfig

    _gate_module: nn.Module | None = None  # the gate_encoder, loaded once (not pickled)

    def __getstate__(self) -> dict:
        return {**super().__getstate__(), "_gate_module": None}

    def init(self, seed: int) -> dict[str, Any]:
        state = super().init(seed)
        state.update(experts=[], gates=[], parents=[], relatedness=[])
        return state

    def _gate_encoder(self) -> nn.Module:
        if self._gate_module is None:
            self._gate_module = encoders.load_encoder(self.config.gate_encoder)
        return self._gate_module

    def gate_features(self, items: np.ndarray, resolution: int | None = None) -> tuple[np.ndarray, float]:
        """(the gates' input features of the model's `items` [N, D], FLOPs spent encoding them): the trunk's features
        (what a frozen trunk already gives, else the pretrained trunk, `encoder`, at `resolution`), a
        `gate_encoder`'s, or without a pretrained trunk the downsampled pixels."""
        cfg = self.config
        if cfg.linear or cfg.trunk_frozen:
            return np.asarray(items, dtype=np.float32), 0.0
        if cfg.gate_encoder is not None or cfg.trunk_spec is not None:
            encoder = self._gate_encoder() if cfg.gate_encoder is not None else self.trunk(resolution)
            flops = self._encoder_forward_flops(encoder, items.shape[1:]) * len(items) if cfg.count_encoder_flops else 0
            return self._encode(encoder, items), float(flops)
        step = cfg.eval_batch_size
        chunks = [model_inputs(items[s : s + step], resolution=cfg.gate_resolution) for s in range(0, len(items), step)]
        return torch.cat(chunks).flatten(1).numpy(), 0.0

    def train(self, event: TrainEvent, state: dict[str, Any]) -> tuple[dict[str, Any], Resources]:
        """Gate first (its own error is the relatedness baseline), then the expert from the most related one."""
        cfg = self.config
        self._check_label_space(event.task, state)
        items, _ = self._items(materialize(event.train_and_dev), "the training data")
        features, flops = self.gate_features(items, self._resolution(event.task))
        seed = derive_seed(state["seed"], event.task_index, _GATE)
        gate, gate_flops = train_gate(
            features, cfg.gate_hidden, cfg.gate_epochs, cfg.gate_lr, cfg.gate_batch_size, seed
        )
        parent, related = None, []
        if state["experts"]:
            own = float(gate_errors(gate, features).mean())
            related = relatedness([gate_errors(g, features).mean() for g in state["gates"]], own).tolist()
            parent = int(np.argmax(related))
            flops += 2.0 * sum(_gate_size(g) for g in [*state["gates"], gate]) * len(features)  # forward passes
        start = {**state, "model": None if parent is None else state["experts"][parent]}
        new_state, spent = super().train(event, start)
        experts, gates = [*state["experts"], new_state["model"]], [*state["gates"], gate]
        stored = count_parameters(self._model(new_state)) * len(experts) + sum(_gate_size(g) for g in gates)
        new_state.update(
            experts=experts,
            gates=gates,
            parents=[*state["parents"], parent],
            relatedness=[*state["relatedness"], related],
        )
        resources = dataclasses.replace(
            spent,
            train_flops=spent.train_flops + gate_flops + flops,
            peak_parameters=max(spent.peak_parameters, stored),
        )
        return new_state, resources

    def route(self, items: np.ndarray, state: dict[str, Any], resolution: int | None = None) -> np.ndarray:
        """Per item (the model's inputs), the index of the expert whose gate reconstructs it best [N].

        The paper's softmax of -error / temperature has the same argmax for every temperature: only it is used.
        """
        if not state["gates"]:
            raise ValueError(f"{self.name}: no gate before the first task is trained")
        features, _ = self.gate_features(items, resolution)
        errors = np.stack([gate_errors(g, features) for g in state["gates"]], axis=1)
        return np.argmin(errors, axis=1)

    def predict(self, event: PredictEvent, state: dict[str, Any]) -> np.ndarray:
        """Cosine scores [N, C] over every fact of the stream, each image scored by its routed expert."""
        if not state["experts"]:
            return super().predict(event, state)  # the seeded initial model
        self._check_label_space(event.task, state)
        targets, _ = fact_space(event.task)
        facts = targets.reshape(len(targets), -1)
        items, _ = self._items(event.dataset, f"the {event.split} split")
        routes = self.route(items, state, self._resolution(event.task))
        scores = np.zeros((len(items), len(facts)), dtype=np.float32)
        for k in np.unique(routes):
            rows = np.flatnonzero(routes == k)
            expert = self._model({**state, "model": state["experts"][k]})
            embeddings = predict_items(expert, items[rows], self.config.eval_batch_size, resolution=state["resolution"])
            scores[rows] = cosine_scores(embeddings, facts)
        return scores


__all__ = [
    "Autoencoder",
    "FactExpertGateConfig",
    "FactExpertGateLearner",
    "gate_errors",
    "relatedness",
    "train_gate",
]
