"""`--stream permuted-mnist` and `--stream rotated-mnist`: domain-incremental streams for CLEAR's protocols.

The factories (entry points `lifelong.temporal_sources`) find the dataset where `lifelong data fetch` installs
it (<data root>/mnist or <data root>/fashion_mnist; Fashion-MNIST also in Debian's package) and build a
lifelong.data.sources.domain_incremental.DomainIncremental over it.
"""

from __future__ import annotations

import os
from pathlib import Path

from lifelong.data.sources.idx import FASHION_MNIST_CLASSES
from lifelong.suites.availability import locate

# dataset -> (class names, domain)
DATASETS: dict[str, tuple[tuple[str, ...], str]] = {
    "mnist": (tuple(str(k) for k in range(10)), "ocr"),
    "fashion_mnist": (FASHION_MNIST_CLASSES, "object"),
}


def dataset_folder(dataset: str, data_root: str | os.PathLike | None = None) -> Path:
    """The folder holding `dataset`'s IDX files; a missing dataset names the command that installs it."""
    if dataset not in DATASETS:
        raise ValueError(f"-s dataset={dataset} is not one of {', '.join(DATASETS)}")
    found = locate(dataset, data_root)
    if not found.available or not (found.source == "fashion-mnist" or (found.source or "").startswith("idx:")):
        raise FileNotFoundError(
            f"{dataset} is not installed (looked in {', '.join(found.looked_in)}): install it with "
            f"`lifelong data fetch {dataset} --from DIR` (DIR holding its four IDX files), or without --from to "
            "download it"
        )
    return Path(found.looked_in[-1])  # locate stops at the folder where it found the data


def _source(transform: str, data_root, dataset: str = "mnist", **options):
    from lifelong.data.sources.domain_incremental import DomainIncremental

    folder = dataset_folder(dataset, data_root)
    classes, domain = DATASETS[dataset]
    return DomainIncremental(
        folder, transform=transform, dataset=dataset, class_names=classes, domain=domain, **options
    )


def permuted_source(
    data_root=None,
    dataset: str = "mnist",
    experiences: int = 5,
    seed: int = 0,
    max_items: int | None = None,
    skip_corrupt: bool = False,
):
    """MNIST (or -s dataset=fashion_mnist) in N experiences, each under its own fixed pixel permutation

    Options: experiences (5), seed (0: the permutations), max_items (each split of an experience; default all),
    dataset (mnist | fashion_mnist); skip_corrupt is accepted and unused (IDX arrays). Every experience is
    permuted, the first too (as Avalanche's PermutedMNIST).
    """
    return _source("permuted", data_root, dataset, experiences=experiences, seed=seed, max_items=max_items)


def rotated_source(
    data_root=None,
    dataset: str = "mnist",
    experiences: int = 5,
    max_angle: float = 180.0,
    seed: int = 0,
    max_items: int | None = None,
    skip_corrupt: bool = False,
):
    """MNIST (or -s dataset=fashion_mnist) in N experiences, experience k turned k * max_angle / N degrees

    Options: experiences (5), max_angle (180), seed (0: the max_items subsets), max_items (default all),
    dataset (mnist | fashion_mnist). The first experience is unrotated.
    """
    return _source(
        "rotated", data_root, dataset, experiences=experiences, max_angle=max_angle, seed=seed, max_items=max_items
    )
