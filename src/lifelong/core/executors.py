"""Executors fan independent work (seeds, trials, model evaluations) out: in-process or over Ray."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]: ...


class LocalExecutor:
    """Runs items one after the other in this process (the default; simplest to debug)."""

    name = "local"

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(item) for item in items]


class RayExecutor:
    """Runs items as Ray tasks, one CPU each: a local Ray started on demand, or a cluster at `address`.

    `fn` may be any picklable callable (a function or an object such as a training job holding its data);
    it is put in Ray's object store once and shared by all items. Results come back in the order of
    `items`; a failed item raises its original error here.
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        cpus_per_item: float = 1.0,
        gpus_per_item: float = 0.0,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_item = cpus_per_item
        self.gpus_per_item = gpus_per_item

    def _ensure_started(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ImportError(
                "the ray executor needs Ray: pip install 'lifelong[ray]' (or use --executor local)"
            ) from None
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "log_to_driver": False,
                "configure_logging": False,
            }
            if self.address:
                kwargs["address"] = self.address
            else:
                kwargs["num_cpus"] = self.num_cpus
            ray.init(**kwargs)
        return ray

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        ray = self._ensure_started()
        remote = ray.remote(num_cpus=self.cpus_per_item, num_gpus=self.gpus_per_item, max_retries=0)(_apply)
        shared = ray.put(fn)
        return ray.get([remote.remote(shared, item) for item in items])

    def shutdown(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()


def _apply(fn: Callable[[T], R], item: T) -> R:
    """Ray task body: call the shared callable on one item."""
    return fn(item)


def make_executor(
    name: str,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    cpus_per_item: float = 1.0,
    gpus_per_item: float = 0.0,
) -> Executor:
    """`local` or `ray`; for Ray, each item reserves `cpus_per_item` CPUs (the run's torch threads) and
    `gpus_per_item` GPUs (fractional: several items share one GPU)."""
    if name == "local":
        if address:
            raise ValueError("--ray-address needs --executor ray")
        if gpus_per_item:
            raise ValueError("--gpus-per-trial needs --executor ray (a local run uses --device)")
        return LocalExecutor()
    if name == "ray":
        if gpus_per_item < 0:
            raise ValueError(f"--gpus-per-trial must be >= 0, got {gpus_per_item}")
        return RayExecutor(address=address, num_cpus=num_cpus, cpus_per_item=cpus_per_item, gpus_per_item=gpus_per_item)
    raise ValueError(f"unknown executor {name!r}; choose 'local' or 'ray'")
