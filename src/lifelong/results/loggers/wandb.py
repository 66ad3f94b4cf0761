"""`--log wandb`: a Weights & Biases run in offline mode, its files in `<run folder>/wandb/` (no server is contacted).

`wandb sync <run folder>/wandb/offline-run-*` uploads it later, if ever. The W&B run is named by the run id and
grouped by the seeds' group; its config is run.json's; each record is logged at step = event index (the scalars
of `RunScalars` on the event axis, with `run/mean_error` charted against `run/cumulative_train_flops`). A resumed
run starts a second offline folder with the same W&B run id: `wandb sync` of both gives one run. W&B writes from a
service process of its own: closing the last W&B run of this process tears that service down, so that the
offline files are complete when the run ends. Closing also removes the links W&B leaves beside its files
(`latest-run`, the debug logs, one to its service's log outside the run folder): a run folder holds plain files,
so that it can be packed and moved (a Ray worker's run lands on the driver that way).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from lifelong.results.ids import group_id
from lifelong.results.loggers import CUMULATIVE_FLOPS, MEAN_ERROR, META_TEST_MEAN_ERROR, RunScalars, missing_package
from lifelong.results.runs import RunData

try:
    import wandb
except ImportError as exc:
    raise missing_package("wandb", "wandb") from exc

FOLDER = "wandb"  # where wandb.init(dir=<run folder>) writes
PROJECT = "lifelong"
_RESERVED = re.compile(r"[:;,#?/'\s]")  # characters a W&B run id cannot hold
# Offline, and W&B's service started without its error reporting: nothing leaves the machine.
_OFFLINE_ENV = {"WANDB_MODE": "offline", "WANDB_ERROR_REPORTING": "false", "WANDB_SILENT": "true"}


@contextmanager
def _offline_env() -> Iterator[None]:
    """`_OFFLINE_ENV` in os.environ while W&B starts (its service reads them), then as it was."""
    saved = {key: os.environ.get(key) for key in _OFFLINE_ENV}
    os.environ.update(_OFFLINE_ENV)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class WandbLogger:
    """One offline W&B run per run folder, fed the event-axis scalars of each record."""

    def __init__(self, run: RunData) -> None:
        self.path = run.path / FOLDER
        self._scalars = RunScalars(run.records)
        settings = wandb.Settings(silent=True, console="off", x_disable_stats=True, disable_git=True)
        with _offline_env():
            self._run = wandb.init(
                mode="offline",
                dir=str(run.path),
                project=PROJECT,
                id=_RESERVED.sub("-", run.run_id),
                name=run.run_id,
                group=group_id(run.run_id),
                config=run.info.get("config", {}),
                resume="allow",
                reinit="create_new",  # leaves a W&B run of the caller's own alone
                settings=settings,
            )
        for tag in (MEAN_ERROR, META_TEST_MEAN_ERROR):
            self._run.define_metric(tag, step_metric=CUMULATIVE_FLOPS)

    def log(self, record: Mapping[str, Any]) -> None:
        values = {s.tag: s.value for s in self._scalars(record) if s.axis == "event"}
        if values:
            self._run.log(values, step=int(record["event"]))

    def close(self, status: str) -> None:
        self._run.finish(exit_code=0 if status == "finished" else 1)
        if wandb.run is None:  # no run of the caller's own: the service may go, writing out the offline files
            wandb.teardown()
        for path in sorted(self.path.rglob("*")):
            if path.is_symlink():
                path.unlink()
