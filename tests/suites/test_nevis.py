"""Nevis'22 streams as data: variant counts, order, repeats, ablations, shuffling, and tasks read from a data root."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _prereq import FASHION_MNIST as FASHION
from _prereq import needs_fashion_mnist
from support import write_mnist

from lifelong.core.tasks import TaskKind
from lifelong.data.sources import LAYOUTS, conform_classes, load_source
from lifelong.data.splits import SPLIT_RULES
from lifelong.suites import STREAMS, availability, describe_stream, get_stream
from lifelong.suites.availability import locate, resolve_data_root
from lifelong.suites.nevis import Ablation, data_status, nevis_stream, parse_variant, task_uids, variant_tasks
from lifelong.suites.nevis_tasks import DATASETS, DOMAINS, FULL_TASKS, NevisTask

COUNTS = {  # variant: (tasks, meta-train, meta-test) with the meta-test part from 2019
    "full": (106, 79, 27),
    "short": (29, 24, 5),
    "tiny": (7, 6, 1),
    "debug": (2, 2, 0),
    "major-domain": (70, 43, 27),
    "large": (67, 40, 27),
    "imagenet": (1, 1, 0),
    "major-domain-object": (65, 38, 27),
}
REFERENCE_VARIANTS = {  # our variant: the reference's NevisStreamVariant
    "full": "FULL", "short": "SHORT", "tiny": "TINY", "debug": "DEBUG", "imagenet": "IMAGENET_ONLY",
    "major-domain": "MAJOR_DOMAIN_ONLY", "large": "LARGE_DATASET_ONLY",
}  # fmt: skip
# fmt: off
REFERENCE_BY_YEAR = {  # dm_nevis dm_nevis/streams/nevis_stream.py NEVIS_STREAM_PER_YEAR (lines 75-251)
    "FULL": {
        1992: ("Magellan Venus Volcanoes", "Aberdeen face database."),
        1998: ("LandSat UCI repo", "Brodatz", "Olivetti Face Dataset"),
        2000: ("COIL 20",),
        2001: ("COIL 100", "MPEG-7"),
        2004: ("Butterfly dataset", "MNIST"),
        2005: ("Caltech 101", "UMIST", "CMU AMP expression"),
        2006: ("Pascal 2005", "Caltech cars, motorbikes", "UIUC cars", "ALOI"),
        2007: ("8 Scene Dataset",),
        2008: ("15 Scenes",),
        2009: ("Pascal 2006", "Extended YaleB"),
        2010: ("Pascal 2007", "Graz-02", "Olivetti Face Dataset", "PPMI"),
        2011: (
            "Caltech 256", "ImageNet", "LFW", "Oxford Flowers", "Flicker Material Dataset", "Oxford Flowers 102",
            "Belgium Traffic Sign Dataset", "German Traffic Sign Recognition Benchmark", "Brodatz", "VisTex",
        ),
        2012: ("UMD", "KTH-TIPS", "UIUC texture", "KTH-TIPS2-b", "CVC-MUSCIMA"),
        2013: ("IAPRTC-12", "sketch dataset", "KTH-TIPS2-a", "Pascal 2012", "NORB"),
        2014: ("Wikipaintings",),
        2015: ("MNIST", "MIT Scenes", "SUN 397", "CIFAR 10"),
        2016: (
            "CUB 200", "Stanford Cars", "FGVC Aircraft", "DTD", "MS COCO", "Caltech 101", "Oxford IIIT Pets",
            "Stanford Dogs", "ANIMAL", "Caltech 101 Silhouettes", "Interact", "VOC Actions", "SVHN", "Chars74K",
        ),
        2017: ("CelebA", "LFWA", "SUN Attribute", "CIFAR 100"),
        2018: (
            "TID2008", "TID2013", "USPS", "Semeion", "MNIST-m", "Office Caltech", "PACS", "Caltech Camera Traps",
            "EMNIST Balanced", "CASIA-HWDB1.1", "ISBI-ISIC 2017 melanoma classification challenge",
        ),
        2019: (
            "Trancos", "Mall dataset", "Fashion MNIST", "NotMNIST", "Tiny Imagenet", "STL10", "Food 101", "MNIST-rot",
            "AWA2", "15 Scenes", "Food 101 N", "COIL 20", "COIL 100",
        ),
        2020: ("ShanghaiTech", "AnimalWeb", "BIWI"),
        2021: (
            "ImageNet", "Oxford Flowers 102", "DomainNet-Real", "Pneumonia Chest X-ray", "Path MNIST",
            "NIH Chest X-ray", "Tubercolosis", "covid-19 x-ray", "PatchCamelyon", "DDSM",
            "Synthetic COVID-19 Chest X-ray Dataset",
        ),
    },
    "SHORT": {
        2004: ("COIL 100", "MNIST"),
        2006: ("Pascal 2005", "Caltech cars, motorbikes", "UIUC cars"),
        2009: ("Pascal 2006",),
        2010: ("Caltech 101",),
        2011: ("Graz-02", "15 Scenes", "Pascal 2007", "LFW"),
        2013: ("sketch dataset", "Brodatz"),
        2014: ("ImageNet", "Pascal 2012", "Caltech 256"),
        2018: (
            "CIFAR 100", "CIFAR 10", "USPS", "MNIST", "MNIST-m", "Office Caltech", "PACS",
            "ISBI-ISIC 2017 melanoma classification challenge",
        ),
        2019: ("Fashion MNIST",),
        2020: ("Stanford Dogs", "CUB 200", "Stanford Cars", "FGVC Aircraft"),
    },
    "TINY": {
        2004: ("MNIST",),
        2010: ("Caltech 101",),
        2014: ("Pascal 2012",),
        2018: ("CIFAR 100", "MNIST", "ISBI-ISIC 2017 melanoma classification challenge"),
        2020: ("CUB 200",),
    },
    "DEBUG": {
        1999: ("Pascal 2007",),
        2000: ("COIL 20",),
    },
    "IMAGENET_ONLY": {
        2014: ("ImageNet",),
    },
    "MAJOR_DOMAIN_ONLY": {
        2000: ("COIL 20",),
        2001: ("COIL 100",),
        2004: ("Butterfly dataset",),
        2005: ("Caltech 101",),
        2006: ("Pascal 2005", "Caltech cars, motorbikes", "UIUC cars", "ALOI"),
        2007: ("8 Scene Dataset",),
        2008: ("15 Scenes",),
        2009: ("Pascal 2006",),
        2010: ("Pascal 2007", "Graz-02", "PPMI"),
        2011: (
            "Caltech 256", "ImageNet", "Oxford Flowers", "Oxford Flowers 102", "Belgium Traffic Sign Dataset",
            "German Traffic Sign Recognition Benchmark",
        ),
        2013: ("IAPRTC-12", "sketch dataset", "Pascal 2012", "NORB"),
        2014: ("Wikipaintings",),
        2015: ("MIT Scenes", "SUN 397", "CIFAR 10"),
        2016: (
            "CUB 200", "Stanford Cars", "FGVC Aircraft", "MS COCO", "Caltech 101", "Oxford IIIT Pets", "Stanford Dogs",
            "Interact", "VOC Actions", "SVHN",
        ),
        2017: ("SUN Attribute", "CIFAR 100"),
        2018: ("Office Caltech", "PACS", "Caltech Camera Traps"),
    },
    "LARGE_DATASET_ONLY": {
        2004: ("MNIST",),
        2005: ("Caltech 101",),
        2006: ("ALOI",),
        2009: ("Extended YaleB",),
        2010: ("Pascal 2007",),
        2011: (
            "Caltech 256", "ImageNet", "LFW", "Belgium Traffic Sign Dataset",
            "German Traffic Sign Recognition Benchmark",
        ),
        2013: ("IAPRTC-12", "sketch dataset", "Pascal 2012", "NORB"),
        2014: ("Wikipaintings",),
        2015: ("MNIST", "MIT Scenes", "SUN 397", "CIFAR 10"),
        2016: (
            "CUB 200", "Stanford Cars", "FGVC Aircraft", "MS COCO", "Caltech 101", "Oxford IIIT Pets", "Stanford Dogs",
            "Caltech 101 Silhouettes", "VOC Actions", "SVHN", "Chars74K",
        ),
        2017: ("CelebA", "LFWA", "SUN Attribute", "CIFAR 100"),
        2018: ("USPS", "MNIST-m", "PACS", "Caltech Camera Traps", "EMNIST Balanced", "CASIA-HWDB1.1"),
    },
}
# fmt: on
for _variant in ("MAJOR_DOMAIN_ONLY", "LARGE_DATASET_ONLY"):  # FULL's meta-test part, as the reference repeats it
    REFERENCE_BY_YEAR[_variant].update({year: REFERENCE_BY_YEAR["FULL"][year] for year in (2019, 2020, 2021)})


def _write_cifar10(folder: Path, per_batch: int = 10, n_test: int = 6) -> None:
    """A tiny CIFAR-10 'python version' folder: two train batches, a test batch and the class names."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(1)
    for name, n in (("data_batch_1", per_batch), ("data_batch_2", per_batch), ("test_batch", n_test)):
        batch = {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), "labels": [i % 10 for i in range(n)]}
        (folder / name).write_bytes(pickle.dumps(batch))
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": names}))


@pytest.fixture
def data_root(tmp_path) -> Path:
    """A data root holding MNIST (IDX) and CIFAR-10 (pickles inside the archive's own folder)."""
    write_mnist(tmp_path / "mnist")
    _write_cifar10(tmp_path / "cifar10" / "cifar-10-batches-py")
    return tmp_path


@pytest.mark.parametrize("variant", sorted(COUNTS))
def test_every_variant_has_its_counts_and_builds_without_reading_data(variant, tmp_path, monkeypatch):
    def no_reading(*args, **kwargs):
        raise AssertionError("building a Nevis stream must not load any source")

    monkeypatch.setattr("lifelong.data.sources.load_source", no_reading)
    assert f"nevis-{variant}" in STREAMS
    summary = describe_stream(get_stream(f"nevis-{variant}", data_root=tmp_path))
    assert (summary["tasks"], summary["meta_train"], summary["meta_test"]) == COUNTS[variant]


@pytest.mark.parametrize("variant", sorted(REFERENCE_VARIANTS))
def test_every_variant_is_the_reference_list_with_its_years(variant):
    by_display = {d.display: d.name for d in DATASETS.values()}
    by_year = REFERENCE_BY_YEAR[REFERENCE_VARIANTS[variant]]
    expected = [(by_display[name.rstrip(".")], year) for year in sorted(by_year) for name in by_year[year]]
    assert [(row.name, row.year) for row in variant_tasks(variant)] == expected
    assert len(expected) == COUNTS[variant][0]
    assert [(row.name, row.year) for row in variant_tasks(variant, meta_test_from_year=2020)] == expected, (
        "the reference's lists are fixed: the meta-test year only moves the boundary"
    )


def test_major_domain_keeps_object_and_scene_tasks_and_the_object_alternative_is_stricter():
    major, strict, full = variant_tasks("major-domain"), variant_tasks("major-domain-object"), variant_tasks("full")
    assert {r.domain for r in major if r.year < 2019} == {"object", "scene"}
    assert [r for r in major if r.year < 2019] == [r for r in full if r.year < 2019 and r.domain in ("object", "scene")]
    assert [r for r in strict if r.year < 2019] == [r for r in full if r.year < 2019 and r.domain == "object"]
    assert [r for r in major if r.year >= 2019] == [r for r in strict if r.year >= 2019] == list(full[79:])
    assert {r.name for r in variant_tasks("major-domain-object", meta_test_from_year=2020) if r.year == 2019} == {
        r.name for r in full if r.year == 2019 and r.domain == "object"
    }, "the object alternative is a rule: it follows the meta-test year"


@pytest.mark.slow  # lists every registered stream (several seconds); the counts test above covers the same streams
def test_lifelong_streams_json_counts_equal_the_reference(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from lifelong.cli import app

    monkeypatch.setenv("LIFELONG_DATA", str(tmp_path))
    result = CliRunner().invoke(app, ["streams", "--json"])
    assert result.exit_code == 0, result.output
    listed = {row["name"]: row for row in json.loads(result.output)}
    for variant, (tasks, meta_train, meta_test) in COUNTS.items():
        row = listed[f"nevis-{variant}"]
        assert (row["tasks"], row["meta_train"], row["meta_test"]) == (tasks, meta_train, meta_test), variant
    assert listed["nevis-debug"]["years"] == [1999, 2000] and listed["nevis-imagenet"]["years"] == [2014, 2014]


def test_full_stream_order_repeats_and_table_facts():
    stream = get_stream("nevis-full")
    keys = [t.key for t in stream.tasks]
    years = [k.year for k in keys]
    assert years == sorted(years) and (years[0], years[-1]) == (1992, 2021)
    assert len({k.uid for k in keys}) == 106 and len(DATASETS) == 97
    repeats = [k for k in keys if k.occurrence >= 1]
    assert sorted(k.uid for k in repeats) == sorted(
        f"{n}#1" for n in ("brodatz", "olivetti", "coil20", "coil100", "mnist", "caltech101", "scenes15", "imagenet",
                           "oxford_flowers102")
    )  # fmt: skip
    first = {k.uid: k for k in keys}
    for key in repeats:
        assert first[key.first_uid].year < key.year and first[key.first_uid].num_classes == key.num_classes
    assert describe_stream(stream)["multi_label"] == 9
    kinds = {k.name: k.kind for k in keys}
    assert kinds["celeba"] is kinds["pascal_2012"] is kinds["pascal_2007"] is TaskKind.MULTI_LABEL
    assert kinds["sun397"] is TaskKind.MULTI_CLASS
    assert {k.name: k.num_classes for k in keys if k.name in ("imagenet", "casia_hwdb", "biwi", "coil100")} == {
        "imagenet": 1000, "casia_hwdb": 3926, "biwi": 15, "coil100": 100,
    }  # fmt: skip
    for row in FULL_TASKS:
        assert row.domain in DOMAINS and row.split_rule in SPLIT_RULES and row.size > 0 and len(row.resolution) == 2
        assert row.published and row.display
    assert {r.split_rule for r in FULL_TASKS if r.name in ("imagenet", "coil100", "domainnet")} == {
        "imagenet", "coil100", "domainnet",
    }  # fmt: skip
    with pytest.raises(AttributeError):
        FULL_TASKS[0].year = 1900


def test_short_and_tiny_use_their_own_years():
    short = variant_tasks("short")
    assert [(r.name, r.year) for r in short if r.name in ("imagenet", "stanford_dogs")] == [
        ("imagenet", 2014), ("stanford_dogs", 2020),
    ]  # fmt: skip
    assert task_uids(variant_tasks("tiny")) == [
        "mnist", "caltech101", "pascal_2012", "cifar100", "mnist#1", "isic2017", "cub200",
    ]  # fmt: skip


def test_ablations_change_only_the_meta_train_part_and_are_seeded():
    full = list(variant_tasks("full"))
    train, test = full[:79], full[79:]
    first = variant_tasks("full", ablation="remove-first-30")
    assert list(first) == train[30:] + test
    last = variant_tasks("full", ablation=Ablation("remove_last"))
    assert list(last) == train[:49] + test
    no_imagenet = variant_tasks("full", ablation="no-imagenet")
    assert [r.year for r in no_imagenet if r.name == "imagenet"] == [2021] and len(no_imagenet) == 105
    drawn = variant_tasks("full", ablation="random-20-seed-3")
    assert drawn == variant_tasks("full", ablation=Ablation("random", 20, 3))
    assert list(drawn[20:]) == test and len(drawn) == 47
    positions = [train.index(r) for r in drawn[:20]]
    assert positions == sorted(positions), "drawn tasks keep their stream order"
    assert drawn != variant_tasks("full", ablation="random-20-seed-4")
    with pytest.raises(ValueError, match="n=80 but the stream has 79 meta-train tasks"):
        variant_tasks("full", ablation="random-80")
    with pytest.raises(ValueError, match="unknown ablation 'drop-half'"):
        Ablation.parse("drop-half")


def test_shuffling_within_years_is_seeded_and_never_crosses_years():
    canonical = variant_tasks("full")
    shuffled = variant_tasks("full", shuffle_seed=7)
    assert shuffled == variant_tasks("full", shuffle_seed=7)
    assert shuffled != canonical and shuffled != variant_tasks("full", shuffle_seed=8)
    assert [r.year for r in shuffled] == [r.year for r in canonical]
    for year in {r.year for r in canonical}:
        assert Counter(r.name for r in shuffled if r.year == year) == Counter(
            r.name for r in canonical if r.year == year
        )
    combined = variant_tasks("full", ablation="random-10-seed-1", shuffle_seed=2)
    assert [r.year for r in combined] == sorted(r.year for r in combined)
    stream = nevis_stream("full", shuffle_seed=7, defer_missing=True)
    assert [t.key.name for t in stream.tasks] == [r.name for r in shuffled]
    assert stream.name == "nevis-full+shuffle-7"


def test_meta_test_year_is_configurable():
    summary = describe_stream(nevis_stream("full", meta_test_from_year=2020, defer_missing=True))
    assert (summary["meta_train"], summary["meta_test"]) == (92, 14)
    assert summary["name"] == "nevis-full+meta-test-from-2020"
    kept = variant_tasks("major-domain-object", meta_test_from_year=2020)
    assert all(r.domain == "object" for r in kept if r.year < 2020), "2019 is meta-train now: its other domains go"
    assert "shanghaitech" in {r.name for r in kept}, "the meta-test part (2020 on) stays whole"
    large = describe_stream(nevis_stream("large", meta_test_from_year=2020, defer_missing=True))
    assert (large["tasks"], large["meta_train"], large["meta_test"]) == (67, 53, 14)
    assert len(variant_tasks("full", meta_test_from_year=2020, ablation="remove-first-90")) == 16


def test_variant_names_parse_and_unknown_ones_are_refused():
    assert parse_variant("MAJOR_DOMAIN_ONLY") == parse_variant("nevis-major-domain") == parse_variant("major-domain")
    assert parse_variant("large_dataset_only").value == "large"
    assert parse_variant("nevis-major-domain-object").value == "major-domain-object"
    with pytest.raises(ValueError, match="unknown Nevis variant 'huge'"):
        nevis_stream("huge")
    with pytest.raises(ValueError, match="exclude each other"):
        nevis_stream("tiny", allow_missing=True, defer_missing=True)


def test_stream_from_a_data_root_refuses_missing_data_then_builds_the_available_tasks(data_root, monkeypatch):
    with pytest.raises(ValueError, match=r"(?s)tasks have no data under.*and \d+ more.*--allow-missing"):
        nevis_stream("full", data_root=data_root)
    monkeypatch.setenv("LIFELONG_DATA", str(data_root))
    assert resolve_data_root() == data_root
    stream = nevis_stream("full", allow_missing=True)
    uids = [t.key.uid for t in stream.tasks]
    assert {"mnist", "mnist#1", "cifar10"} <= set(uids) <= {"mnist", "mnist#1", "cifar10", "fashion_mnist"}
    assert len(stream.missing_tasks) == 106 - len(uids) and "imagenet#1" in stream.missing_tasks
    mnist = stream.splits(uids.index("mnist"))
    assert mnist.notes["split_sizes"] == {"train": 21, "dev": 5, "dev_test": 4, "test": 8}
    assert mnist.notes["split_rule"] == "train_test" and mnist.train.image_shape == (64, 64, 3)
    cifar = stream.splits(uids.index("cifar10"))
    assert cifar.notes["split_sizes"] == {"train": 14, "dev": 3, "dev_test": 3, "test": 6}
    assert cifar.notes["source"]["source_class_names"][0] == "airplane"
    assert stream.tasks[uids.index("cifar10")].key.class_names == tuple(str(k) for k in range(10))
    assert stream.tasks[uids.index("mnist#1")].key.year == 2015


def test_a_deferred_task_without_data_says_what_to_provide(tmp_path):
    stream = get_stream("nevis-tiny", data_root=tmp_path)
    assert stream.missing_tasks == ("mnist", "caltech101", "pascal_2012", "cifar100", "mnist#1", "isic2017", "cub200")
    with pytest.raises(
        FileNotFoundError, match=rf"task 'caltech101' has no data: put Caltech 101 .* in {tmp_path}/caltech101/"
    ):
        stream.splits(1)


def test_data_status_reports_available_and_missing_tasks(data_root):
    status = {row["uid"]: row for row in data_status("nevis-full", data_root=data_root)}
    assert len(status) == 106
    assert status["mnist"]["available"] and status["mnist#1"]["source"] == f"idx:{data_root / 'mnist'}"
    assert status["cifar10"]["source"] == f"cifar:{data_root / 'cifar10' / 'cifar-10-batches-py'}"
    missing = status["imagenet"]
    assert not missing["available"] and missing["source"] is None and missing["year"] == 2011
    assert missing["expected"] == f"{data_root / 'imagenet'}/" and missing["looked_in"] == [str(data_root / "imagenet")]
    assert missing["layouts"] == [text for _, text in LAYOUTS] and "Deng et al." in missing["published"]
    assert "IDX files" in missing["provide"] and "save_to_disk" in missing["provide"]
    assert [row["uid"] for row in data_status("tiny", data_root=data_root) if row["available"]] == ["mnist", "mnist#1"]


@needs_fashion_mnist
def test_debian_fashion_mnist_is_found_when_the_data_root_lacks_it(tmp_path):
    found = locate("fashion_mnist", tmp_path)
    assert found.available and found.source == "fashion-mnist"
    assert found.looked_in == (str(tmp_path / "fashion_mnist"), str(FASHION))
    stream = nevis_stream("short", data_root=tmp_path, allow_missing=True)
    assert [t.key.uid for t in stream.tasks] == ["fashion_mnist"] and stream.tasks[0].key.year == 2019


def test_fashion_mnist_is_missing_with_a_reason_when_no_copy_exists(tmp_path, monkeypatch):
    monkeypatch.setitem(availability.SYSTEM_COPIES, "fashion_mnist", ("fashion-mnist", (tmp_path / "nowhere",)))
    row = next(r for r in data_status("short", data_root=tmp_path) if r["name"] == "fashion_mnist")
    assert not row["available"] and row["looked_in"] == [str(tmp_path / "fashion_mnist"), str(tmp_path / "nowhere")]
    assert row["provide"].startswith(
        f"put Fashion MNIST (Fashion-MNIST (Xiao, Rasul and Vollgraf, 2017)) in {tmp_path}"
    )


def test_data_classes_are_mapped_onto_the_declared_ones(tmp_path, write_png):
    for i, name in enumerate(["zebra", "ant", "cat"]):
        write_png(tmp_path / name / f"{i}.png", i)
    placeholders = ("0", "1", "2")
    data = load_source(f"folder:{tmp_path}", expect_classes=placeholders)
    assert data.class_names == placeholders and data.notes["source_class_names"] == ["ant", "cat", "zebra"]
    renamed = conform_classes(data, ("2", "0", "1"))
    assert renamed.labels.tolist() == [1, 2, 0] and renamed.class_names == ("2", "0", "1")
    with pytest.raises(ValueError, match="has 3 classes .* but the task expects 4"):
        load_source(f"folder:{tmp_path}", expect_classes=("0", "1", "2", "3"))
    digits = conform_classes(load_source(f"folder:{tmp_path}", expect_classes=placeholders), tuple("0123456789"))
    assert digits.num_classes == 10 and digits.labels.tolist() == [0, 1, 2], "integer names keep their number"


@pytest.fixture
def write_png():
    from PIL import Image

    def write(path: Path, value: int) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (5, 4), (value * 40, 255 - value * 40, 7)).save(path)
        return path

    return write


def test_rows_are_frozen_dataclasses_with_the_table_fields():
    row = FULL_TASKS[0]
    assert isinstance(row, NevisTask)
    assert (row.name, row.display, row.year, row.kind, row.domain, row.num_classes, row.size, row.resolution) == (
        "magellan_venus_volcanoes", "Magellan Venus Volcanoes", 1992, TaskKind.MULTI_CLASS, "satellite", 2, 102,
        (1024, 1024),
    )  # fmt: skip


def test_each_accepted_layout_is_detected_from_names_alone(tmp_path, write_png):
    from lifelong.data.sources import detect_source

    write_mnist(tmp_path / "idx")
    (tmp_path / "csv").mkdir()
    (tmp_path / "csv" / "labels.csv").write_text("path,label\n")
    write_png(tmp_path / "folder" / "train" / "cat" / "0.png", 1)
    write_png(tmp_path / "nested" / "archive" / "cat" / "0.png", 2)
    (tmp_path / "empty").mkdir()
    assert detect_source(tmp_path / "idx") == f"idx:{tmp_path / 'idx'}"
    assert detect_source(tmp_path / "csv") == f"csv:{tmp_path / 'csv' / 'labels.csv'}"
    assert detect_source(tmp_path / "folder") == f"folder:{tmp_path / 'folder'}"
    assert detect_source(tmp_path / "nested") == f"folder:{tmp_path / 'nested' / 'archive'}"
    assert detect_source(tmp_path / "empty") is None and detect_source(tmp_path / "absent") is None
