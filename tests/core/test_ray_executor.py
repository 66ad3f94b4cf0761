"""The executors' contract: results in order, a callback per result here, errors re-raised, lost workers retried."""

import os
from pathlib import Path

import pytest

from lifelong.core.executors import LocalExecutor, Placement, RayExecutor, WorkerLostError, make_executor


def _square(x):
    return x * x


def _fail_on_three(x):
    if x == 3:
        raise KeyError(f"item {x} is bad")
    return x


def _crash_first_time(job):
    """Kill this worker process the first time (a marker file says it happened), then answer."""
    marker, x = job
    if not Path(marker).exists():
        Path(marker).touch()
        os._exit(1)
    return x * 10


@pytest.fixture(scope="module")
def ray_session():
    from _prereq import import_or_missing  # here: Ray workers import this module without tests/ on their path

    ray = import_or_missing("ray", "ray")
    executor = RayExecutor(num_cpus=2)
    executor.map(_square, [0])  # starts the local Ray once for the module
    yield ray
    executor.shutdown()


def test_local_executor_calls_back_after_each_item():
    seen = []
    assert LocalExecutor().map(_square, [3, 1, 2], on_result=lambda i, r: seen.append((i, r))) == [9, 1, 4]
    assert seen == [(0, 9), (1, 1), (2, 4)]


def test_ray_keeps_order_calls_back_once_per_result_and_says_where_items_ran(ray_session):
    executor = RayExecutor(max_retries=1)
    seen = {}
    results = executor.map(_square, list(range(6)), on_result=lambda i, r: seen.setdefault(i, r))
    assert results == [x * x for x in range(6)]
    assert seen == dict(enumerate(results))  # each index exactly once, with its own result
    node = ray_session.get_runtime_context().get_node_id()
    assert all(isinstance(p, Placement) and p.node_id == node and p.attempts == 1 for p in executor.last_placements)
    assert executor.last_losses == [] and executor.map(_square, []) == []


def test_ray_reraises_the_items_own_error(ray_session):
    executor = RayExecutor()
    with pytest.raises(KeyError, match="item 3 is bad") as caught:
        executor.map(_fail_on_three, [1, 2, 3, 4])
    assert type(caught.value) is KeyError  # the original class, not Ray's wrapper
    assert any("raised in a Ray worker" in note for note in caught.value.__notes__)
    assert executor.last_losses == []  # an error is not a lost worker: no retry


def test_ray_retries_an_item_whose_worker_died(ray_session, tmp_path):
    executor = RayExecutor()
    jobs = [(str(tmp_path / "a"), 1), (str(tmp_path / "b"), 2)]
    assert executor.map(_crash_first_time, jobs) == [10, 20]
    assert [p.attempts for p in executor.last_placements] == [2, 2]
    assert sorted(index for index, attempt, _ in executor.last_losses) == [0, 1]
    assert all("WorkerCrashedError" in error for *_, error in executor.last_losses)
    with pytest.raises(WorkerLostError, match="lost its Ray worker 1 times"):
        RayExecutor(max_retries=0).map(_crash_first_time, [(str(tmp_path / "c"), 3)])


def test_resources_are_validated(ray_session):
    for bad in (-1, 1.5, float("inf")):
        with pytest.raises(ValueError, match="--gpus-per-trial"):
            make_executor("ray", gpus_per_item=bad)
    with pytest.raises(ValueError, match="--gpus-per-trial needs --executor ray"):
        make_executor("local", gpus_per_item=0.5)
    with pytest.raises(ValueError, match="max_retries"):
        RayExecutor(max_retries=-1)
    assert make_executor("ray", gpus_per_item=0.25).gpus_per_item == 0.25
    assert make_executor("ray", gpus_per_item=2).gpus_per_item == 2
    with pytest.raises(ValueError, match="no node of the Ray cluster can hold one item"):
        RayExecutor(cpus_per_item=64).map(_square, [1])  # would otherwise wait forever
    if not ray_session.cluster_resources().get("GPU"):
        with pytest.raises(ValueError, match="GPU 0"):
            RayExecutor(gpus_per_item=0.5).map(_square, [1])
