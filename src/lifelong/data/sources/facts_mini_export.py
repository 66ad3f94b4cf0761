"""facts-mini as a folder a user can read and edit: PNG images and the FACTS.csv that `lifelong run --stream
FOLDER/FACTS.csv` (and `fact_manifest`) reads back."""

from __future__ import annotations

import csv
import os
import shutil
import tempfile
from pathlib import Path

from PIL import Image

from lifelong.data.sources.facts_mini import FactsMini
from lifelong.facts.facts import UNDEFINED


def export_facts_csv(fm: FactsMini, root: str | os.PathLike) -> Path:
    """Write `root/images/<split>_<i>.png` and `root/FACTS.csv` (S,P,O,image,split; `*` = undefined); returns the
    CSV's path. `root` must not exist or be empty; it appears whole or not at all."""
    root = Path(root)
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} exists and is not empty; remove it or export into another folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
    try:
        (staging / "images").mkdir()
        rows = [("S", "P", "O", "image", "split")]
        for split in ("train", "test"):
            images, labels = getattr(fm, f"{split}_images"), getattr(fm, f"{split}_facts")
            for i, (image, label) in enumerate(zip(images, labels, strict=True)):
                name = f"images/{split}_{i:06d}.png"
                Image.fromarray(image).save(staging / name)
                rows.append((*(part or UNDEFINED for part in fm.facts[label]), name, split))
        with open(staging / "FACTS.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        os.replace(staging, root)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return root / "FACTS.csv"
