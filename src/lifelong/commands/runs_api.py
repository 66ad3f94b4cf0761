"""`lifelong run` as a function: a learner over a stream, one run per seed, in this process or on Ray.

`run(RunsSpec(...))` checks the options as the command does (raising UsageError in its words), runs every seed
and returns each run's summary (what `runner.execute` returns); a plain `RunSpec` is one run here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lifelong.commands import portable as portable_mode
from lifelong.commands.runner import RunSpec
from lifelong.core.errors import Interrupted, UsageError
from lifelong.core.progress import Progress


@dataclass(frozen=True)
class RunsSpec:
    """`lifelong run`'s options: a RunSpec's fields (`seed` is the first seed) plus the seeds and where they run.

    `protocol` is `--protocol` (temporal streams: iid, the default, or streaming); `channels_last` takes auto, on
    or off (or RunSpec's None, True, False); `loggers` takes names or `tensorboard,wandb` as `--log` does;
    `executor` is local or ray (`ray_address`, `num_cpus` and `gpus_per_trial` for Ray); `portable` is
    `--portable` (default: the LIFELONG_PORTABLE environment variable).
    """

    stream: str = "mini"
    learner: str = "independent"
    seed: int = 0
    seeds: int = 1
    out: str | Path = "runs"
    learner_options: Mapping[str, Any] = field(default_factory=dict)
    eval_split: str = "dev_test"
    skip_corrupt: bool = False
    resume: bool = False
    overwrite: bool = False
    stop_after: int | None = None
    threads: int = 1
    data_root: str | Path | None = None
    allow_missing: bool = False
    stream_options: Mapping[str, Any] = field(default_factory=dict)
    protocol: str | None = None
    metrics: tuple[str, ...] = ()
    save_predictions: bool = True
    loggers: tuple[str, ...] | str = ()
    device: str = "auto"
    precision: str = "auto"
    channels_last: bool | str | None = "auto"
    compile: bool = False
    executor: str = "local"
    ray_address: str | None = None
    num_cpus: int | None = None
    gpus_per_trial: float = 0.0
    portable: bool = field(default_factory=portable_mode.requested)

    @classmethod
    def of(cls, spec: RunSpec) -> RunsSpec:
        """The one-seed, local RunsSpec of a RunSpec (its `progress` aside: `run` takes that as an argument)."""
        fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(RunSpec) if f.name != "progress"}
        return cls(**fields)

    def run_specs(self, progress: Progress = False) -> list[RunSpec]:
        """One checked RunSpec per seed, as `lifelong run` builds them; a bad option raises UsageError."""
        from lifelong.commands.device_options import accelerator_specs, check_ray_gpus
        from lifelong.results.loggers import parse_names
        from lifelong.suites import classify_stream
        from lifelong.suites.clear import PROTOCOLS

        if self.seeds < 1:
            raise UsageError(f"--seeds must be >= 1, got {self.seeds}")
        try:
            temporal = classify_stream(self.stream).is_temporal
            accelerator = accelerator_specs(self.device, self.precision, self.compile, self.channels_last)
            check_ray_gpus(self.executor, self.device, self.gpus_per_trial)
            loggers = parse_names(self.loggers)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        stream_options = dict(self.stream_options)
        if temporal:
            stream_options.setdefault("protocol", self.protocol or "iid")
            if stream_options["protocol"] not in PROTOCOLS:
                raise UsageError(f"unknown protocol {stream_options['protocol']!r}; choose one of {PROTOCOLS}")
        elif self.protocol is not None:
            raise UsageError(
                f"--protocol applies to temporal streams (clear-mini, clear, a timestamped CSV), not {self.stream!r}"
            )
        return [
            RunSpec(
                stream=self.stream,
                learner=self.learner,
                seed=seed,
                out=str(self.out),
                learner_options=dict(self.learner_options),
                eval_split=self.eval_split,
                skip_corrupt=self.skip_corrupt,
                resume=self.resume,
                overwrite=self.overwrite,
                progress=progress if self.executor == "local" else False,
                stop_after=self.stop_after,
                threads=self.threads,
                data_root=str(self.data_root) if self.data_root else None,
                allow_missing=self.allow_missing,
                stream_options=stream_options,
                metrics=tuple(self.metrics),
                save_predictions=self.save_predictions,
                loggers=loggers,
                portable=self.portable,
                **accelerator,
            )
            for seed in range(self.seed, self.seed + self.seeds)
        ]


def run(spec: RunsSpec | RunSpec, *, progress: Progress = False) -> list[dict]:
    """Run every seed of `spec` (a RunSpec: one run here) and return each run's summary, in seed order.

    Every run lands in `spec.out`/<run id> (on Ray too, as each run ends). Ctrl-C raises Interrupted: every
    completed event is checkpointed (on Ray: finished runs are kept), and the same spec with `resume=True`
    continues. `progress` shows each local run's events (True: a bar; a callback gets `(description, done, total)`).
    """
    from lifelong.commands import remote_runs
    from lifelong.core.executors import make_executor
    from lifelong.results.loggers import load_loggers

    if isinstance(spec, RunSpec):
        spec = RunsSpec.of(spec)
    specs = spec.run_specs(progress)
    if spec.portable:  # here too, before a local Ray starts: its workers inherit the mode's variables
        portable_mode.enable()
    load_loggers(specs[0].loggers)  # an unknown logger, or its package missing: said before any run starts
    try:
        runner = make_executor(
            spec.executor,
            address=spec.ray_address,
            num_cpus=spec.num_cpus,
            cpus_per_item=spec.threads,
            gpus_per_item=spec.gpus_per_trial,
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        results = remote_runs.run_specs(runner, specs)  # on Ray, each run's folder and records land in out as it ends
        shutdown = getattr(runner, "shutdown", None)
        if shutdown is not None:
            shutdown()
    except KeyboardInterrupt:
        kept = "Every completed event is checkpointed." if spec.executor == "local" else "Finished runs are in --out."
        raise Interrupted(f"{kept} Resume with the same command plus --resume.") from None
    return results


__all__ = ["RunsSpec", "run"]
