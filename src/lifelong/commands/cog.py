"""`lifelong cog ...`: ImageNet-CoG's concept levels (unseen concepts ranked by similarity to the seen ones)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from lifelong.commands.terminal import console, error_console, fail

cog_app = typer.Typer(help="ImageNet-CoG: concept generalization levels built from WordNet.", no_args_is_help=True)

ORDER_HELP = (
    "Filter order: 'paper' (main text: seen, seen-ancestors, person, manual, count, leaves), 'supplement' "
    "(seen, count, person, seen-ancestors, leaves, manual; parent rule) or a comma-separated list of those filters."
)


def _note(text: str) -> None:
    error_console.print(f"[yellow]note:[/] {escape(text)}")


@cog_app.command("levels")
def levels_command(
    out: Annotated[Path, typer.Option("--out", metavar="FILE.csv", help="CSV to write: wnid,name,similarity,level.")],
    seen: Annotated[
        Path | None, typer.Option("--seen", metavar="FILE", help="Seen wnids, one per line (default: ImageNet-1K).")
    ] = None,
    candidates: Annotated[
        Path | None,
        typer.Option("--candidates", metavar="FILE", help="Candidate wnids (default: ImageNet-21K fall 2011)."),
    ] = None,
    counts: Annotated[
        Path | None, typer.Option("--counts", metavar="FILE", help="Images per concept: a CSV of wnid,count rows.")
    ] = None,
    images: Annotated[
        Path | None, typer.Option("--images", metavar="DIR", help="Count images in DIR/<wnid>/* instead.")
    ] = None,
    similarity: Annotated[str, typer.Option("--similarity", metavar="lin|wup|jcn", help="Similarity measure.")] = "lin",
    levels: Annotated[int, typer.Option("--levels", metavar="N", help="Number of levels.")] = 5,
    per_level: Annotated[
        int | None,
        typer.Option("--per-level", metavar="N", help="Concepts per level (default: 1000 if enough, else even)."),
    ] = None,
    order: Annotated[str, typer.Option("--order", metavar="ORDER", help=ORDER_HELP)] = "paper",
    relation: Annotated[
        str | None,
        typer.Option(
            "--relation", metavar="ancestor|parent", help="Rule of seen-ancestors and leaves (default: the order's)."
        ),
    ] = None,
    exclusions: Annotated[
        Path | None,
        typer.Option("--exclusions", metavar="FILE", help="Manually excluded wnids (default: the paper's 70)."),
    ] = None,
    min_images: Annotated[int, typer.Option("--min-images", metavar="N", help="The count filter's minimum.")] = 782,
    wordnet: Annotated[
        Path | None,
        typer.Option("--wordnet", metavar="DIR", help="WordNet 3.0 database folder (default: /usr/share/wordnet)."),
    ] = None,
) -> None:
    """Build ImageNet-CoG levels: filter the candidates, rank by similarity to the seen concepts, cut into levels."""
    from lifelong.concepts import (
        ConceptError,
        LevelSpec,
        build_levels,
        count_images,
        levels_csv,
        read_counts,
        read_wnids,
    )
    from lifelong.core.files import atomic_write_bytes

    started = time.perf_counter()
    try:
        if counts is not None and images is not None:
            raise ConceptError("give image counts either as --counts FILE or as --images DIR, not both")
        image_counts, ignored = None, []
        if counts is not None:
            image_counts = read_counts(counts)
        elif images is not None:
            image_counts, ignored = count_images(images)
        spec = LevelSpec(
            seen=read_wnids(seen) if seen else None,
            candidates=read_wnids(candidates) if candidates else None,
            exclusions=read_wnids(exclusions) if exclusions else None,
            counts=image_counts,
            min_images=min_images,
            order=order,
            relation=relation,
            similarity=similarity,
            levels=levels,
            per_level=per_level,
        )
        result = build_levels(spec, wordnet=wordnet)
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    atomic_write_bytes(out, levels_csv(result).encode())
    elapsed = time.perf_counter() - started

    table = Table(title="ImageNet-CoG: concepts left after each filter")
    for column, justify in (("step", "right"), ("filter", "left"), ("what it does", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    table.add_column("left", justify="right", overflow="fold")
    table.add_column("removed", justify="right", overflow="fold")
    for number, step in enumerate(result.steps):
        removed = "skipped" if step.skipped else str(step.removed)
        table.add_row(str(number), step.name, escape(step.skipped or step.description), str(step.left), removed)
    console.print(table)

    ranks = Table(title=f"{len(result.bounds)} levels by {result.similarity} similarity ({result.eligible} eligible)")
    for column in ("level", "concepts", "ranks", "most similar", "least similar"):
        ranks.add_column(column, justify="right", overflow="fold")
    for number, (start, stop) in enumerate(result.bounds, start=1):
        top, bottom = result.ranking[start]["similarity"], result.ranking[stop - 1]["similarity"]
        ranks.add_row(str(number), str(stop - start), f"{start + 1}-{stop}", f"{top:.4f}", f"{bottom:.4f}")
    console.print(ranks)
    for note in result.notes:
        _note(note)
    if ignored:
        _note(f"{len(ignored)} entries of {images} are not wnid folders and were not counted: {', '.join(ignored[:5])}")
    console.print(f"wrote {len(result.rows)} concepts in {len(result.bounds)} levels to {escape(str(out))}")
    console.print(f"time: {elapsed:.1f} s")


# -- `lifelong cog run` and `lifelong cog pretrain` ---------------------------------------------------------------

SHOTS_HELP = "Comma-separated: all (every training image) and/or shots per concept, e.g. all,1,2,4,8,16,32."


@cog_app.command("run")
def run_command(
    encoder: Annotated[Path, typer.Option("--encoder", metavar="FILE", help="Encoder: a toolkit checkpoint.")],
    data: Annotated[
        str, typer.Option("--data", metavar="cog-mini|DIR", help="cog-mini, or ImageNet-style DIR/<wnid>/* folders.")
    ] = "cog-mini",
    levels_file: Annotated[
        Path | None, typer.Option("--levels-file", metavar="FILE.csv", help="With --data DIR: `cog levels` output.")
    ] = None,
    levels: Annotated[str, typer.Option("--levels", metavar="LIST", help="Levels, e.g. seen,1,2,3,4,5.")] = "",
    shots: Annotated[str, typer.Option("--shots", metavar="LIST", help=SHOTS_HELP)] = "all",
    seeds: Annotated[
        int, typer.Option("--seeds", min=1, max=5, help="Protocol seeds 22, 37, 45, 77, 93 (first N).")
    ] = 5,
    probe: Annotated[str, typer.Option("--probe", metavar="fast|reference", help="Probe recipe.")] = "fast",
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Results folder (one run folder per run).")] = Path(
        "runs"
    ),
    executor: Annotated[str, typer.Option("--executor", metavar="local|ray", help="Fan runs out over Ray.")] = "local",
    num_cpus: Annotated[int | None, typer.Option("--num-cpus", help="CPUs for a local Ray (default: all).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue interrupted runs; skip finished ones.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Start existing runs over.")] = False,
    data_root: Annotated[
        Path | None, typer.Option("--data-root", help="Data root (cog-mini cache, feature sets).")
    ] = None,
    threads: Annotated[int, typer.Option("--threads", min=1, help="Torch threads per run.")] = 1,
) -> None:
    """Probe a frozen encoder level by level: extract features once, then run the CoG stream for every seed."""
    started = time.perf_counter()
    try:
        features = prepare_features(encoder, data, levels_file=levels_file, data_root=data_root, threads=threads)
        specs = cog_run_specs(
            features,
            data,
            levels=levels or None,
            shots=shots,
            seeds=seeds,
            probe=probe,
            out=out,
            resume=resume,
            overwrite=overwrite,
            data_root=data_root,
            threads=threads,
            progress=executor == "local",
        )
        results = run_cog_specs(specs, executor=executor, num_cpus=num_cpus, threads=threads)
    except KeyboardInterrupt:
        console.print("[yellow]Interrupted.[/] Every finished event is checkpointed: rerun with [bold]--resume[/].")
        raise typer.Exit(130) from None
    except (FileNotFoundError, ValueError, ImportError, RuntimeError) as exc:
        raise fail(exc) from None
    print_cog_table(results, title=f"ImageNet-CoG top-1 (%), {features}, {probe} probe")
    console.print(
        f"results: {escape(str(out))} (`lifelong results --out {escape(str(out))}`); time: "
        f"{time.perf_counter() - started:.1f} s"
    )


@cog_app.command("pretrain")
def pretrain_command(
    kind: Annotated[str, typer.Option("--kind", metavar="supervised|simclr", help="Training signal.")],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Encoder file to write.")],
    epochs: Annotated[int, typer.Option("--epochs", min=1, help="Training epochs.")] = 30,
    resolution: Annotated[int, typer.Option("--resolution", min=8, help="Input side.")] = 32,
    architecture: Annotated[str, typer.Option("--architecture", help="Backbone.")] = "resnet_mini",
    seed: Annotated[int, typer.Option("--seed", help="Seed.")] = 0,
    threads: Annotated[int, typer.Option("--threads", min=1, help="Torch threads.")] = 1,
    data_root: Annotated[Path | None, typer.Option("--data-root", help="Data root (cog-mini cache).")] = None,
) -> None:
    """Train an encoder on cog-mini's seen concepts' training images (labels: supervised; none: SimCLR)."""
    started = time.perf_counter()
    try:
        summary = pretrain_cog_encoder(
            kind,
            out,
            epochs=epochs,
            resolution=resolution,
            architecture=architecture,
            seed=seed,
            threads=threads,
            data_root=data_root,
        )
    except (FileNotFoundError, ValueError) as exc:
        raise fail(exc) from None
    for key, value in summary.items():
        console.print(f"{key}: {escape(str(value))}")
    console.print(f"time: {time.perf_counter() - started:.1f} s")


def _cog_mini_folders(data_root: Path | None):
    """(cog-mini, its export `<cache>/folders/<level>/<split>/<wnid>/*.png`), exporting the missing levels."""
    from lifelong.data.sources.cog_mini import export_folders, load_cog_mini

    cog = load_cog_mini(data_root=data_root, progress=True)
    root = cog.path / "folders"
    missing = [name for name in cog.levels if not (root / name).is_dir()]
    if missing:
        export_folders(cog, root, missing)
    return cog, root


def _level_files(root: Path, wnids: tuple[str, ...], split: str) -> tuple[list[str], list[int]]:
    """Files and labels of one exported level split, in (label, file name) order."""
    files, labels = [], []
    for label, wnid in enumerate(wnids):
        names = sorted(p for p in (root / split / wnid).iterdir() if p.is_file())
        files += [str(p) for p in names]
        labels += [label] * len(names)
    return files, labels


def _folder_levels(data: Path, levels_file: Path | None) -> dict[str, dict]:
    """{level: {wnids, train, test}} of ImageNet-style concept folders: seen = ImageNet-1K folders, L1.. from CSV."""
    import csv

    from lifelong.concepts.wnids import imagenet1k
    from lifelong.data.sources.concept_folders import scan_concept_folders

    if levels_file is None:
        raise ValueError("--data DIR needs --levels-file FILE.csv (written by `lifelong cog levels`)")
    with open(levels_file, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"wnid", "level"} <= set(rows[0]):
        raise ValueError(f"{levels_file} needs wnid and level columns (the output of `lifelong cog levels`)")
    present = {p.name for p in data.iterdir() if p.is_dir()}
    groups = {"seen": sorted(w for w in imagenet1k() if w in present)}
    for row in rows:
        groups.setdefault(f"L{int(row['level'])}", []).append(row["wnid"])
    out = {}
    for name, wnids in groups.items():
        if not wnids:
            _note(f"level {name}: no concept folder in {data}; left out")
            continue
        splits = scan_concept_folders(data, wnids=sorted(wnids))
        out[name] = {"wnids": splits.wnids, "train": splits.split("train"), "test": splits.split("test")}
    return out


def prepare_features(
    encoder: Path, data: str, *, levels_file: Path | None = None, data_root: Path | None = None, threads: int = 1
) -> str:
    """Extract (or resume, or reuse) every level's train/test features; return the features set's name.

    The set lives in `<data root>/cog-features/<name>`, name = dataset-encoder-hash (of the encoder file's bytes
    and the dataset's identity), and its cog.json lists the levels whose features are complete.
    """
    import hashlib
    import json

    from lifelong.core.files import atomic_write_bytes
    from lifelong.suites.cog import FORMAT, INDEX_FILE, features_root
    from lifelong.training.features import extract_features
    from lifelong.training.loop import set_torch_threads

    if not encoder.is_file():
        raise FileNotFoundError(f"encoder file {str(encoder)!r} not found; train one with `lifelong cog pretrain`")
    set_torch_threads(threads)
    if data == "cog-mini":
        cog, root = _cog_mini_folders(data_root)
        dataset, identity = "cog-mini", cog.path.name
        levels = {}
        for name, level in cog.levels.items():
            splits = {split: _level_files(root / name, level.wnids, split) for split in ("train", "test")}
            levels[name] = {"wnids": level.wnids, **splits, "similarity": level.similarity.round(6).tolist()}
    else:
        folder = Path(data)
        if not folder.is_dir():
            raise FileNotFoundError(f"--data {data!r} is neither cog-mini nor a folder of <wnid>/ image folders")
        levels = _folder_levels(folder, levels_file)
        dataset, identity = folder.name, f"{folder.resolve()}:{Path(levels_file).read_text(encoding='utf-8')}"
    digest = hashlib.sha256(encoder.read_bytes() + identity.encode()).hexdigest()[:10]
    name = f"{dataset}-{encoder.stem}-{digest}".replace("/", "_")
    folder = features_root(data_root) / name
    for level, content in levels.items():
        for split in ("train", "test"):
            files, labels = content[split]
            extract_features(encoder, files, labels, folder / level / split, progress=True)
    index = {
        "format": FORMAT,
        "dataset": dataset,
        "dataset_identity": identity if data == "cog-mini" else str(Path(data).resolve()),
        "encoder": {"name": encoder.stem, "file": str(encoder.resolve())},
        "levels": [
            {"name": level, "wnids": list(content["wnids"]), "similarity": content.get("similarity")}
            for level, content in levels.items()
        ],
    }
    atomic_write_bytes(folder / INDEX_FILE, json.dumps(index, indent=1).encode())
    return name


def cog_run_specs(
    features: str,
    data: str,
    *,
    levels: str | None,
    shots: str,
    seeds: int,
    probe: str,
    out: Path,
    resume: bool,
    overwrite: bool,
    data_root: Path | None,
    threads: int,
    progress: bool,
) -> list:
    """One RunSpec per (level, shots, seed): the fan-out unit (its own run folder, checkpoint and resume)."""
    from lifelong.commands.runner import RunSpec
    from lifelong.suites.cog import ALL, parse_levels, parse_shots, read_index, resolve_features
    from lifelong.training.probes import COG_SEEDS

    index = read_index(resolve_features(features, data_root))
    chosen = parse_levels(levels, [level["name"] for level in index["levels"]])
    counts = parse_shots(shots)
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
            stream_options={"features": features, "levels": level, "shots": ALL if count is None else str(count)},
        )
        for level in chosen
        for count in counts
        for seed in COG_SEEDS[:seeds]
    ]


def _run_or_skip(spec) -> dict:
    """execute(spec); with --resume a finished run is read back instead of failing as 'exists'."""
    import json

    from lifelong.commands.runner import execute

    summary_file = spec.folder / "summary.json"
    if spec.resume and summary_file.is_file():
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        if summary.get("events_done") == summary.get("events_total"):
            from lifelong.results import read_run

            return {**summary, "records": read_run(spec.folder).records}
    return execute(spec)


def run_cog_specs(specs: list, *, executor: str = "local", num_cpus: int | None = None, threads: int = 1) -> list:
    """Run every spec through the executor (local, or Ray: levels x shots x seeds in parallel)."""
    from lifelong.core.executors import make_executor

    return make_executor(executor, num_cpus=num_cpus, cpus_per_item=threads).map(_run_or_skip, specs)


def cog_top1(results: list[dict]) -> dict[tuple[str, str], list[float]]:
    """{(level, shots): [test top-1 % per seed]} from run summaries' predict records."""
    from lifelong.suites.cog import split_task_name

    table: dict[tuple[str, str], list[float]] = {}
    for result in results:
        for record in result["records"]:
            if record["type"] == "predict" and record.get("error") is not None:
                level, shots = split_task_name(record["task"])
                table.setdefault((level, shots), []).append(100.0 * (1.0 - float(record["error"])))
    return table


def print_cog_table(results: list[dict], *, title: str) -> None:
    """Top-1 per level (rows) and shots (columns): mean +- population std over seeds, and relative to seen."""
    import numpy as np

    table = cog_top1(results)
    levels = list(dict.fromkeys(level for level, _ in table))
    shots = list(dict.fromkeys(s for _, s in table))
    out = Table(title=title)
    out.add_column("level")
    for count in shots:
        out.add_column(f"{count} (mean ± std)", justify="right")
    out.add_column("seeds", justify="right")
    for level in levels:
        cells = []
        for count in shots:
            values = table.get((level, count), [])
            cells.append(f"{np.mean(values):.2f} ± {np.std(values):.2f}" if values else "-")
        out.add_row(level, *cells, str(max(len(table.get((level, c), [])) for c in shots)))
    console.print(out)
    first = shots[0]
    if ("seen", first) in table:
        seen = float(np.mean(table[("seen", first)]))
        relative = ", ".join(
            f"{level} {100 * np.mean(table[(level, first)]) / seen:.1f}%" for level in levels if (level, first) in table
        )
        console.print(f"relative to seen ({first}; mean level top-1 / mean seen top-1): {relative}")
    console.print("std: population standard deviation over seeds (divisor n), as the protocol reports it")


def pretrain_cog_encoder(
    kind: str,
    out: Path,
    *,
    epochs: int,
    resolution: int,
    architecture: str,
    seed: int,
    threads: int,
    data_root: Path | None,
) -> dict:
    """Train an encoder on cog-mini's seen training images: supervised (`lifelong.training.pretrain`) or SimCLR."""
    from lifelong.commands.pretraining import pretrain_command as supervised
    from lifelong.training.encoders import save_encoder
    from lifelong.training.loop import set_torch_threads
    from lifelong.training.ssl import pretrain_simclr

    if kind not in ("supervised", "simclr"):
        raise ValueError(f"--kind must be supervised or simclr, got {kind!r}")
    cog, root = _cog_mini_folders(data_root)
    seen = cog.levels["seen"]
    if kind == "supervised":
        source = f"folder:{root / 'seen' / 'train'}"
        summary = supervised(
            source, out, architecture=architecture, epochs=epochs, resolution=resolution, seed=seed, threads=threads
        )
        return {"encoder": str(out), "kind": kind, "images": len(seen.train_labels), **summary}
    set_torch_threads(threads)
    workdir = out.with_name(out.name + ".work")
    with_bar = progress_bar_for(epochs)
    with with_bar as bar:
        checkpoint = pretrain_simclr(
            seen.train_images,
            architecture=architecture,
            resolution=resolution,
            epochs=epochs,
            seed=seed,
            workdir=workdir,
            source="cog-mini seen train",
            progress=lambda epoch, total, loss: bar(
                completed=epoch, total=total, description=f"SimCLR loss {loss:.3f}"
            ),
        )
    save_encoder(checkpoint, out)
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)
    return {
        "encoder": str(out),
        "kind": kind,
        "images": len(seen.train_labels),
        "epochs": checkpoint.epochs,
        "feature_dim": checkpoint.feature_dim,
        "final_loss": checkpoint.history[-1]["loss"] if checkpoint.history else None,
    }


def progress_bar_for(epochs: int):
    """The one progress bar, over `epochs`."""
    from lifelong.core.progress import progress_bar

    return progress_bar(True, epochs, description="SimCLR")
