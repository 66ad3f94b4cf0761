"""Executors fan independent work (seeds, trials, model evaluations) out: in-process or over Ray."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from lifelong.core.errors import LifelongError

T = TypeVar("T")
R = TypeVar("R")
OnResult = Callable[[int, Any], None]  # (index of the item, its result), called on the driver as each item ends


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], items: Sequence[T], on_result: OnResult | None = None) -> list[R]: ...


class LocalExecutor:
    """Runs items one after the other in this process (the default; simplest to debug)."""

    name = "local"

    def map(self, fn: Callable[[T], R], items: Sequence[T], on_result: OnResult | None = None) -> list[R]:
        results = []
        for index, item in enumerate(items):
            results.append(fn(item))
            if on_result is not None:
                on_result(index, results[-1])
        return results


@dataclass(frozen=True)
class Placement:
    """Where an item ran: its Ray node (id and IP), the worker process, and the attempts it took (1: no retry)."""

    node_id: str
    node_ip: str
    pid: int
    attempts: int


class WorkerLostError(LifelongError, RuntimeError):
    """An item's Ray worker (or its node) was lost more times than the executor retries."""


# Ray errors that mean the worker, its node or the result's copy was lost, not that the item failed: retried.
_LOST = (
    "WorkerCrashedError",
    "NodeDiedError",
    "LocalRayletDiedError",
    "ObjectLostError",
    "OutOfMemoryError",
    "RaySystemError",
)


class RayExecutor:
    """Runs items as Ray tasks: a local Ray started on demand, or the cluster at `address`.

    Each item reserves `cpus_per_item` CPUs and `gpus_per_item` GPUs (fractional: items share a GPU) and tasks
    are spread over the nodes (scheduling strategy SPREAD). `fn` may be any picklable callable (a function or an
    object such as a training job holding its data); it is put in Ray's object store once and shared by all
    items. Results come back in the order of `items`; `on_result(index, result)` runs here, on the driver, as
    each item ends. An item whose worker or node is lost is run again, up to `max_retries` times; an item
    that fails raises its original error here (not retried) and the items still running are cancelled.
    `last_placements[i]` tells where item i of the last `map` ran and after how many attempts;
    `last_losses` lists the lost attempts as (index, attempt, error).
    """

    name = "ray"

    def __init__(
        self,
        address: str | None = None,
        num_cpus: int | None = None,
        cpus_per_item: float = 1.0,
        gpus_per_item: float = 0.0,
        max_retries: int = 3,
    ) -> None:
        _check_resources(cpus_per_item, gpus_per_item)
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        self.address = address
        self.num_cpus = num_cpus
        self.cpus_per_item = cpus_per_item
        self.gpus_per_item = gpus_per_item
        self.max_retries = max_retries
        self.last_placements: list[Placement | None] = []
        self.last_losses: list[tuple[int, int, str]] = []

    def _ensure_started(self) -> Any:
        try:
            import ray
        except ImportError:
            raise ImportError(
                "the ray executor needs Ray: pip install 'lifelong[ray]' (or use --executor local)"
            ) from None
        if not ray.is_initialized():
            os.environ.setdefault("RAY_TQDM_PATCH_PRINT", "0")  # leave this process's builtins.print alone
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

    def _check_feasible(self, ray: Any) -> None:
        """Fail at once, rather than wait forever, when no live node has the resources of one item."""
        need = {"CPU": self.cpus_per_item, "GPU": self.gpus_per_item}
        nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
        if any(all(have.get(k, 0.0) >= v for k, v in need.items() if v > 0) for have in nodes):
            return
        offered = "; ".join(f"CPU {n.get('CPU', 0):g}, GPU {n.get('GPU', 0):g}" for n in nodes) or "no live node"
        raise ValueError(
            f"no node of the Ray cluster can hold one item ({self.cpus_per_item:g} CPUs from --threads, "
            f"{self.gpus_per_item:g} GPUs from --gpus-per-trial); its nodes offer: {offered}"
        )

    def map(self, fn: Callable[[T], R], items: Sequence[T], on_result: OnResult | None = None) -> list[R]:
        ray = self._ensure_started()
        items = list(items)
        self.last_placements, self.last_losses = [None] * len(items), []
        if not items:
            return []
        self._check_feasible(ray)
        remote = ray.remote(_apply).options(
            num_cpus=self.cpus_per_item,
            num_gpus=self.gpus_per_item,
            max_retries=0,  # lost workers are retried here, where the attempts are counted
            retry_exceptions=False,
            scheduling_strategy="SPREAD",
        )
        lost = tuple(getattr(ray.exceptions, name) for name in _LOST)
        shared = ray.put(fn)
        pending = {remote.remote(shared, item): index for index, item in enumerate(items)}
        attempts = [1] * len(items)
        results: list[Any] = [None] * len(items)
        try:
            while pending:
                [ref], _ = ray.wait(list(pending), num_returns=1)
                index = pending.pop(ref)
                try:
                    node_id, node_ip, pid, result = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    raise _original(exc) from None
                except lost as exc:
                    self.last_losses.append((index, attempts[index], f"{type(exc).__name__}: {exc}".split("\n")[0]))
                    if attempts[index] > self.max_retries:
                        raise WorkerLostError(
                            f"item {index} lost its Ray worker {attempts[index]} times (max_retries="
                            f"{self.max_retries}); last: {type(exc).__name__}: {exc}"
                        ) from exc
                    attempts[index] += 1
                    pending[remote.remote(shared, items[index])] = index
                    continue
                results[index] = result
                self.last_placements[index] = Placement(node_id, node_ip, pid, attempts[index])
                if on_result is not None:
                    on_result(index, result)
        except BaseException:
            for ref in pending:
                ray.cancel(ref)
            raise
        return results

    def shutdown(self) -> None:
        import ray

        if ray.is_initialized():
            ray.shutdown()


def _original(exc: Any) -> BaseException:
    """The item's own exception from a RayTaskError, with the remote traceback attached as a note."""
    cause = getattr(exc, "cause", None)
    if not isinstance(cause, BaseException):
        return exc
    cause.add_note(f"raised in a Ray worker:\n{getattr(exc, 'traceback_str', '')}".rstrip())
    return cause


def _apply(fn: Callable[[T], R], item: T) -> tuple[str, str, int, R]:
    """Ray task body: call the shared callable on one item; also say which node and process ran it."""
    import ray

    return ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), os.getpid(), fn(item)


def _check_resources(cpus_per_item: float, gpus_per_item: float) -> None:
    """Ray's rules for per-task resources, with the command-line names."""
    if not cpus_per_item >= 0:
        raise ValueError(f"CPUs per item (--threads) must be >= 0, got {cpus_per_item}")
    if not gpus_per_item >= 0 or math.isinf(gpus_per_item):
        raise ValueError(f"--gpus-per-trial must be >= 0, got {gpus_per_item}")
    if gpus_per_item > 1 and gpus_per_item != int(gpus_per_item):
        raise ValueError(
            f"--gpus-per-trial above 1 must be a whole number of GPUs, got {gpus_per_item}; a fraction (0 to 1) "
            "shares one GPU between trials"
        )


def make_executor(
    name: str,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    cpus_per_item: float = 1.0,
    gpus_per_item: float = 0.0,
    max_retries: int = 3,
) -> Executor:
    """`local` or `ray`; for Ray, each item reserves `cpus_per_item` CPUs (the run's torch threads) and
    `gpus_per_item` GPUs (fractional: several items share one GPU), and an item whose worker is lost is run
    again up to `max_retries` times."""
    if name == "local":
        if address:
            raise ValueError("--ray-address needs --executor ray")
        if gpus_per_item:
            raise ValueError("--gpus-per-trial needs --executor ray (a local run uses --device)")
        return LocalExecutor()
    if name == "ray":
        return RayExecutor(
            address=address,
            num_cpus=num_cpus,
            cpus_per_item=cpus_per_item,
            gpus_per_item=gpus_per_item,
            max_retries=max_retries,
        )
    raise ValueError(f"unknown executor {name!r}; choose 'local' or 'ray'")
