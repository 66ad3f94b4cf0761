"""The runs of a CoG features set: one RunSpec per (level, shots, seed), each its own run folder, checkpoint and
resume; run through an executor (finished ones read back with --resume) and their top-1 per level and shots."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lifelong.core.errors import UsageError
from lifelong.core.progress import Progress, progress_bar
from lifelong.suites.cog import SEEN_DRAWS


def cog_run_specs(
    features: str,
    data: str,
    *,
    levels: str | None,
    shots: str,
    seeds: int | Sequence[int],
    probe: str,
    out: Path,
    resume: bool,
    overwrite: bool,
    data_root: Path | None,
    threads: int,
    progress: bool,
    accelerator: dict | None = None,
    seen_draws: int = SEEN_DRAWS,
) -> list:
    """One RunSpec per (level, shots, seed): the fan-out unit (its own run folder, checkpoint and resume).

    `seeds`: the protocol seeds to run, or a number K for the first K of them. `progress`: each run's own bar.
    """
    from lifelong.suites.cog import parse_levels, parse_shots, read_index, resolve_features
    from lifelong.training.probes import COG_SEEDS

    folder = resolve_features(features, data_root)
    index = read_index(folder)
    chosen = parse_levels(levels, [level["name"] for level in index["levels"]])
    counts = parse_shots(shots)
    _check_shots(folder, index, chosen, [c for c in counts if c is not None])
    seed_list = list(COG_SEEDS[:seeds]) if isinstance(seeds, int) else list(seeds)
    return level_run_specs(
        features,
        data,
        chosen,
        counts,
        seeds=seed_list,
        probe=probe,
        out=out,
        resume=resume,
        overwrite=overwrite,
        data_root=data_root,
        threads=threads,
        progress=progress,
        accelerator=accelerator,
        seen_draws=seen_draws,
    )


def level_run_specs(
    features: str,
    data: str,
    levels: list[str],
    counts: list[int | None],
    *,
    seeds: Sequence[int],
    probe: str,
    out: Path,
    resume: bool,
    overwrite: bool,
    data_root: Path | None,
    threads: int,
    progress: bool,
    accelerator: dict | None = None,
    seen_draws: int = SEEN_DRAWS,
) -> list:
    """The RunSpecs of checked levels, shot counts and seeds (reads nothing: run ids are known before extraction)."""
    from lifelong.commands.runner import RunSpec
    from lifelong.suites.cog import ALL, SEEN

    stream = "cog-mini" if data == "cog-mini" else "cog"
    return [
        RunSpec(
            stream=stream,
            learner="linear-probe",
            seed=seed,
            out=str(out),
            learner_options={"probe": probe},
            eval_split="test",
            resume=resume,
            overwrite=overwrite,
            progress=progress,
            threads=threads,
            data_root=str(data_root) if data_root else None,
            stream_options={"features": features, "levels": level, "shots": ALL if count is None else str(count)}
            | ({"seen_draws": str(seen_draws)} if level == SEEN and seen_draws != SEEN_DRAWS else {}),
            **(accelerator or {}),
        )
        for level in levels
        for count in counts
        for seed in seeds
    ]


def _check_shots(folder: Path, index: dict, levels: list[str], counts: list[int]) -> None:
    """Before any run starts: every level must give the largest shot count for every concept."""
    from lifelong.suites.cog import read_split
    from lifelong.training.probe_data import few_shot_capacity

    if not counts:
        return
    wnids = {level["name"]: level["wnids"] for level in index["levels"]}
    for level in levels:
        most, label = few_shot_capacity(read_split(folder, level, "train")[1])
        if max(counts) > most:
            raise UsageError(
                f"--shots {max(counts)} is more than level {level!r} can give: concept {wnids[level][label]} has "
                f"{most} training images left after the 20% validation split; use at most {most} shots"
            )


def _finished(spec) -> dict | None:
    """With --resume, the summary (and records) of a run that already finished in its folder; else None."""
    import json

    summary_file = spec.folder / "summary.json"
    if spec.resume and summary_file.is_file():
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        if summary.get("events_done") == summary.get("events_total"):
            from lifelong.results import read_run

            return {**summary, "records": read_run(spec.folder).records}
    return None


def run_cog_specs(
    specs: list,
    *,
    executor: str = "local",
    num_cpus: int | None = None,
    threads: int = 1,
    gpus_per_trial: float = 0.0,
    address: str | None = None,
    progress: Progress = False,
) -> list:
    """Run every spec through the executor (local, or Ray: levels x shots x seeds in parallel, spread over the
    cluster at `address`, each run landing in the driver's --out as it ends); with --resume, finished runs are
    read back here instead of failing as 'exists'. A `progress` callback is told of each finished run (each run's
    own bar is its spec's `progress`)."""
    from lifelong.commands.remote_runs import run_specs
    from lifelong.core.executors import make_executor

    runner = make_executor(
        executor, address=address, num_cpus=num_cpus, cpus_per_item=threads, gpus_per_item=gpus_per_trial
    )
    results = [_finished(spec) for spec in specs]
    todo = [i for i, result in enumerate(results) if result is None]
    batches = [[i] for i in todo] if runner.name == "local" else [todo]  # local runs end one by one
    with progress_bar(progress if callable(progress) else False, len(todo), description="cog runs") as advance:
        for batch in batches:
            for i, summary in zip(batch, run_specs(runner, [specs[i] for i in batch]), strict=True):
                results[i] = summary
                advance(1, f"cog run {specs[i].run_id}")
    return results


def cog_top1(results: list[dict]) -> dict[tuple[str, str], list[float]]:
    """{(level, shots): [test top-1 % per seed (and per draw of the seen concepts)]} from run summaries' predict
    records."""
    from lifelong.suites.cog import base_level, split_task_name

    table: dict[tuple[str, str], list[float]] = {}
    for result in results:
        for record in result["records"]:
            if record["type"] == "predict" and record.get("error") is not None:
                level, shots = split_task_name(record["task"])
                table.setdefault((base_level(level), shots), []).append(100.0 * (1.0 - float(record["error"])))
    return table
