"""A real two-node Ray cluster on this machine: HP trials and runs spread over both nodes, one worker killed mid-run.

The head node and the second node are separate raylets, each with its own working directory and temp folder (where
workers keep their scratch run folders); the driver's results folder is apart from both. The test prints the
figures it checks: trials and runs per node, records landed in the driver's SQLite, and the retried run.
"""

import os
import signal
import sqlite3
import threading
import time

import numpy as np
from _prereq import import_or_missing

from lifelong.commands.remote_runs import run_remote
from lifelong.commands.runner import RunSpec
from lifelong.core import ArrayDataset, TaskKey
from lifelong.core.executors import RayExecutor
from lifelong.results.store import DB_FILE, RunFolder
from lifelong.training.hpsearch import SearchSpace, sample_trials, search
from lifelong.training.recipe import FitJob

# Not marked slow: about 30 s, and the only check that runs really cross nodes (CI runs it on every change).
RUN_OPTIONS = {"epochs": 1, "resolution": 16}  # about 10 s a run on one core: long enough to be killed mid-run
EVENTS = 18  # records of one run of the mini stream


def _start_cluster(tmp_path):
    """Head and second node, each with its own working directory and TMPDIR; returns (cluster, {node id: name})."""
    from ray.cluster_utils import Cluster

    homes = {name: tmp_path / name for name in ("head", "second")}
    for home in homes.values():
        (home / "tmp").mkdir(parents=True)
    here = os.getcwd()
    try:  # a raylet's workers inherit its working directory and environment
        os.chdir(homes["head"])
        head_args = {"num_cpus": 1, "include_dashboard": False, "env_vars": {"TMPDIR": str(homes["head"] / "tmp")}}
        cluster = Cluster(initialize_head=True, head_node_args=head_args)
        os.chdir(homes["second"])
        second = cluster.add_node(num_cpus=1, env_vars={"TMPDIR": str(homes["second"] / "tmp")})
    finally:
        os.chdir(here)
    return cluster, {cluster.head_node.node_id: "head", second.node_id: "second"}, homes


def _tiny_fit_job():
    key = TaskKey("colours", "multi-class", 3)
    rng = np.random.default_rng(0)

    def data(n, split):
        labels = rng.integers(0, 3, n)
        colours = np.array([[220, 30, 30], [30, 220, 30], [30, 30, 220]])
        images = np.clip(colours[labels][:, None, None] + rng.normal(0, 30, (n, 8, 8, 3)), 0, 255).astype(np.uint8)
        return ArrayDataset(key, split, images, labels)

    return FitJob("resnet_mini", 3, key.kind, data(64, "train"), data(32, "dev"), seed=0, epochs=1, resolution=None)


def _kill_a_run_mid_way(scratch_root, stop, killed):
    """When a run on this node has written 2+ records, SIGKILL the worker process holding its folder's lock."""
    while not stop.is_set():
        for events in scratch_root.glob("lifelong-run-*/*/events.jsonl"):
            records = events.read_bytes().count(b"\n")
            if 2 <= records <= EVENTS // 2:
                pid = int((events.parent / ".lock").read_text().split()[1])  # "PID <pid> (...)"
                os.kill(pid, signal.SIGKILL)
                killed.update(run_id=events.parent.name, pid=pid, records_on_worker=records)
                return
        time.sleep(0.02)


def _per_node(placements, names):
    counts = {name: 0 for name in names.values()}
    for placement in placements:
        counts[names[placement.node_id]] += 1
    return counts


def test_trials_and_runs_spread_over_two_nodes_and_survive_a_killed_worker(tmp_path):
    import_or_missing("ray", "ray")
    cluster, names, homes = _start_cluster(tmp_path)
    executor = RayExecutor(address=cluster.address, cpus_per_item=1)
    driver = tmp_path / "driver"
    try:
        # HP trials: persisted by the driver as each comes back
        trials = sample_trials(SearchSpace(trials=4), seed=0)
        best, results = search(_tiny_fit_job(), trials, workdir=driver / "trials", executor=executor)
        trial_nodes = _per_node(executor.last_placements, names)
        assert sorted(p.name for p in (driver / "trials").iterdir()) == [f"trial-{i:04d}.pkl" for i in range(4)]
        assert all(count > 0 for count in trial_nodes.values()), trial_nodes

        # runs: one worker on the second node is killed mid-run
        specs = [RunSpec(learner="independent", seed=s, out=str(driver), learner_options=RUN_OPTIONS) for s in range(4)]
        stop, killed = threading.Event(), {}
        watcher = threading.Thread(target=_kill_a_run_mid_way, args=(homes["second"] / "tmp", stop, killed))
        watcher.start()
        try:
            summaries = run_remote(executor, specs)
        finally:
            stop.set()
            watcher.join()
        placements, losses = executor.last_placements, executor.last_losses
    finally:
        executor.shutdown()
        cluster.shutdown()

    assert killed, "no run on the second node was seen mid-run"
    run_ids = [spec.run_id for spec in specs]
    retried = run_ids.index(killed["run_id"])
    assert [p.attempts for p in placements] == [2 if i == retried else 1 for i in range(len(specs))]
    assert [(index, attempt) for index, attempt, _ in losses] == [(retried, 1)]
    run_nodes = _per_node(placements, names)
    assert all(count > 0 for count in run_nodes.values()), run_nodes

    with sqlite3.connect(driver / DB_FILE) as con:
        per_run = con.execute(
            "SELECT run_id, COUNT(*), COUNT(DISTINCT event_index), MIN(event_index), MAX(event_index)"
            " FROM events GROUP BY run_id ORDER BY run_id"
        ).fetchall()
        statuses = dict(con.execute("SELECT run_id, status FROM runs").fetchall())
    assert per_run == [(run_id, EVENTS, EVENTS, 0, EVENTS - 1) for run_id in sorted(run_ids)]  # each record once
    assert statuses == {run_id: "finished" for run_id in run_ids}
    for spec, summary in zip(specs, summaries, strict=True):
        assert summary["path"] == str(spec.folder) and summary["events_done"] == EVENTS
        assert [r["event"] for r in RunFolder(spec.folder).read_records()] == list(range(EVENTS))
    # scratch folders are removed once sent back; only the killed attempt's stays on its node
    leftovers = {name: sorted(p.name for p in (home / "tmp").glob("lifelong-run-*")) for name, home in homes.items()}
    assert len(leftovers["second"]) == 1 and leftovers["head"] == [], leftovers

    landed = sum(count for _, count, *_ in per_run)
    print(
        f"\ntwo-node Ray: HP trials per node {trial_nodes} (best trial {best.trial.index}); runs per node "
        f"{run_nodes}; records landed in {DB_FILE}: {landed} ({len(run_ids)} runs x {EVENTS}, each once); "
        f"retried: {killed['run_id']} (worker PID {killed['pid']} on the second node SIGKILLed after "
        f"{killed['records_on_worker']} records; attempts {placements[retried].attempts}, finished on "
        f"{names[placements[retried].node_id]}; lost attempt: {losses[0][2].split('. ')[0]})"
    )
