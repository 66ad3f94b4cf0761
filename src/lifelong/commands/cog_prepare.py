"""Data preparation behind `lifelong cog run` and `lifelong cog pretrain`: cog-mini's exported folders or
ImageNet-style concept folders, level by level, into a features set; and the cog-mini encoders."""

from __future__ import annotations

from pathlib import Path

from lifelong.commands.terminal import note


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
            note(f"level {name}: no concept folder in {data}; left out")
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
    from lifelong.training.encoders import save_encoder, untrained_encoder
    from lifelong.training.loop import set_torch_threads
    from lifelong.training.ssl import pretrain_simclr

    if kind not in ("supervised", "simclr", "random"):
        raise ValueError(f"--kind must be supervised, simclr or random, got {kind!r}")
    if kind == "random":
        checkpoint = untrained_encoder(architecture, resolution=resolution, seed=seed)
        save_encoder(checkpoint, out)
        return {"encoder": str(out), "kind": kind, "epochs": 0, "feature_dim": checkpoint.feature_dim, "seed": seed}
    cog, root = _cog_mini_folders(data_root)
    seen = cog.levels["seen"]
    if kind == "supervised":
        source = f"folder:{root / 'seen' / 'train'}"
        summary = supervised(
            source, out, architecture=architecture, epochs=epochs, resolution=resolution, seed=seed, threads=threads
        )
        return {**summary, "encoder": str(out), "kind": kind, "images": len(seen.train_labels)}
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
