"""`--log mlflow`: an MLflow run in the file store `<run folder>/mlruns` (no tracking server).

One experiment named by the stream, one MLflow run named by the run id (tag `lifelong.run_id`): the run's stream,
learner, seed, split and options as params, run.json as an artifact, and each record's scalars as metrics
(`RunScalars`; MLflow allows letters, digits, `_-. /` in a name, so a task uid's other characters become `_`).
A resumed run reopens the same MLflow run and continues its steps. MLflow keeps the file store in maintenance mode
behind `MLFLOW_ALLOW_FILE_STORE=true`: the logger sets it while it writes; a reader sets it too, e.g.
`MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri file:RUN_FOLDER/mlruns`.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lifelong.results.loggers import RunScalars, missing_package
from lifelong.results.runs import RUN_FILE, RunData

# MLflow reports its usage to a server of its own unless told not to (it decides when it is imported): nothing of a
# run leaves the machine, unless the user set MLFLOW_DISABLE_TELEMETRY themselves.
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
try:
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient
except ImportError as exc:
    raise missing_package("mlflow", "mlflow") from exc

FOLDER = "mlruns"
RUN_ID_TAG = "lifelong.run_id"
ALLOW_FILE_STORE = "MLFLOW_ALLOW_FILE_STORE"
_STATUS = {"finished": "FINISHED", "interrupted": "KILLED", "failed": "FAILED"}
_NOT_IN_NAMES = re.compile(r"[^\w\-. /]")
_BATCH = 1000  # MLflow's limit of metrics per log_batch


def metric_name(tag: str) -> str:
    """`tag` as an MLflow metric name (letters, digits, `_`, `-`, `.`, space and `/`)."""
    return _NOT_IN_NAMES.sub("_", tag)


def tracking_uri(run_dir: str | os.PathLike[str]) -> str:
    """The file-store URI of a run folder's MLflow runs."""
    return (Path(run_dir).resolve() / FOLDER).as_uri()


def _params(info: Mapping[str, Any]) -> list[Param]:
    config = info.get("config", {})
    params = {key: config.get(key) for key in ("stream", "learner", "seed", "eval_split")}
    params.update({f"o.{k}": v for k, v in (config.get("learner_options") or {}).items()})
    params.update({f"s.{k}": v for k, v in (config.get("stream_options") or {}).items()})
    return [Param(metric_name(k), str(v)[:6000]) for k, v in params.items()]


class MlflowLogger:
    """Each record's scalars as MLflow metrics of one run in the run folder's file store."""

    def __init__(self, run: RunData) -> None:
        self._scalars = RunScalars(run.records)
        self._saved_env = os.environ.get(ALLOW_FILE_STORE)
        os.environ[ALLOW_FILE_STORE] = "true"  # until close: the store refuses to open without it
        # MLflow caches a store per URI: a folder deleted since (--overwrite) must be there again for it
        (run.path / FOLDER / ".trash").mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(tracking_uri=tracking_uri(run.path))
        name = str(run.info.get("stream", {}).get("name") or run.info.get("config", {}).get("stream") or "lifelong")
        experiment = self.client.get_experiment_by_name(name)
        experiment_id = experiment.experiment_id if experiment else self.client.create_experiment(name)
        found = self.client.search_runs([experiment_id], filter_string=f"tags.`{RUN_ID_TAG}` = '{run.run_id}'")
        if found:  # a resumed run: the same MLflow run, running again
            self.mlflow_run_id = found[0].info.run_id
            self.client.update_run(self.mlflow_run_id, status="RUNNING")
        else:
            created = self.client.create_run(experiment_id, run_name=run.run_id, tags={RUN_ID_TAG: run.run_id})
            self.mlflow_run_id = created.info.run_id
            self.client.log_batch(self.mlflow_run_id, params=_params(run.info))
            # run.json as the run's artifact; it also keeps the run's artifacts folder, which MLflow requires of
            # a run, from being empty (an empty folder does not travel with a run folder packed on a Ray worker)
            self.client.log_artifact(self.mlflow_run_id, str(run.path / RUN_FILE))

    def log(self, record: Mapping[str, Any]) -> None:
        now = int(time.time() * 1000)
        metrics = [Metric(metric_name(s.tag), s.value, now, s.step) for s in self._scalars(record)]
        for start in range(0, len(metrics), _BATCH):
            self.client.log_batch(self.mlflow_run_id, metrics=metrics[start : start + _BATCH])

    def close(self, status: str) -> None:
        try:
            self.client.set_terminated(self.mlflow_run_id, _STATUS[status])
        finally:
            if self._saved_env is None:
                os.environ.pop(ALLOW_FILE_STORE, None)
            else:
                os.environ[ALLOW_FILE_STORE] = self._saved_env
