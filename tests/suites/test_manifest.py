"""Custom streams from YAML / TOML manifests over folder, csv, idx and builtin sources (tiny files in tmp_path)."""

from __future__ import annotations

import pickle
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from support import write_corrupt_png, write_png

from lifelong.core.events import PredictEvent, TrainEvent
from lifelong.core.tasks import TaskKind
from lifelong.data.images import CorruptImageError
from lifelong.data.sources.builtin import SHAPE_CLASSES
from lifelong.data.splits import SPLIT_NAMES
from lifelong.suites import describe_stream, get_stream
from lifelong.suites.manifest import manifest_specs

# ---------------------------------------------------------------------------------------------------------
# tiny data on disk


def _idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


PETS = {"cat": (9, 7, False), "dog": (6, 10, True), "fox": (8, 8, False)}  # class -> height, width, gray
PETS_PER_CLASS = 4
CSV_ROWS = 10
TAG_CELLS = ["a;b", "c", "a", "b;c", "", "a;b;c", "b", "a;c", "c", "a"]
IDX_TRAIN, IDX_TEST = 10, 4


def _write_pets(folder: Path) -> None:
    for k, (cls, (h, w, gray)) in enumerate(PETS.items()):
        for i in range(PETS_PER_CLASS):
            write_png(folder / cls / f"{i}.png", 100 * k + i, h, w, gray)
    (folder / "README.txt").write_text("not an image: ignored")


def _write_data(root: Path) -> None:
    """data/pets (folder, 3 classes), data/csv/{items,tags}.csv (multi-class, multi-label), data/mnist (IDX)."""
    _write_pets(root / "data" / "pets")
    csv_dir = root / "data" / "csv"
    for i in range(CSV_ROWS):
        write_png(csv_dir / "img" / f"{i}.png", 1000 + i, 5, 6)
    items = ["path,label"] + [f"img/{i}.png,{'ab'[i % 2]}" for i in range(CSV_ROWS)]
    (csv_dir / "items.csv").write_text("\n".join(items) + "\n")
    tags = ["path,labels"] + [f"img/{i}.png,{cell}" for i, cell in enumerate(TAG_CELLS)]
    (csv_dir / "tags.csv").write_text("\n".join(tags) + "\n")
    rng = np.random.default_rng(7)
    mnist = root / "data" / "mnist"
    _idx(mnist / "train-images-idx3-ubyte", rng.integers(0, 256, (IDX_TRAIN, 6, 6)))
    _idx(mnist / "train-labels-idx1-ubyte", np.arange(IDX_TRAIN) % 3)
    _idx(mnist / "t10k-images-idx3-ubyte", rng.integers(0, 256, (IDX_TEST, 6, 6)))
    _idx(mnist / "t10k-labels-idx1-ubyte", np.arange(IDX_TEST) % 3)


YAML_MANIFEST = """\
name: my-stream
meta_test_from_year: 2015
tasks:
  - name: pets
    source: folder
    path: data/pets
    year: 2000
    resolution: 16
    domain: animals
  - name: items
    source: csv
    path: data/csv/items.csv
    year: 2005
    kind: multi-class
    resolution: 24
  - name: tags
    source: csv
    path: data/csv/tags.csv
    year: 2010
    kind: multi-label
    classes: [a, b, c]
    resolution: 8
  - name: mnist
    source: idx
    path: data/mnist
    year: 2015
    resolution: 12
    options: {class_names: [zero, one, two]}
  - name: shapes
    source: builtin:shapes
    year: 2019
    resolution: 20
    domain: objects
    options: {n_per_class: 3, seed: 1, size: 16}
  - name: pets
    source: folder
    path: data/pets
    year: 2021
    resolution: 16
    domain: animals
"""

TOML_MANIFEST = """\
name = "my-stream"
meta_test_from_year = 2015

[[tasks]]
name = "pets"
source = "folder"
path = "data/pets"
year = 2000
resolution = 16
domain = "animals"

[[tasks]]
name = "items"
source = "csv"
path = "data/csv/items.csv"
year = 2005
kind = "multi-class"
resolution = 24

[[tasks]]
name = "tags"
source = "csv"
path = "data/csv/tags.csv"
year = 2010
kind = "multi-label"
classes = ["a", "b", "c"]
resolution = 8

[[tasks]]
name = "mnist"
source = "idx"
path = "data/mnist"
year = 2015
resolution = 12
options = { class_names = ["zero", "one", "two"] }

[[tasks]]
name = "shapes"
source = "builtin:shapes"
year = 2019
resolution = 20
domain = "objects"
options = { n_per_class = 3, seed = 1, size = 16 }

[[tasks]]
name = "pets"
source = "folder"
path = "data/pets"
year = 2021
resolution = 16
domain = "animals"
"""

# uid -> (year, kind, class names, resolution, number of items)
EXPECTED = {
    "pets": (2000, "multi-class", ("cat", "dog", "fox"), 16, 12),
    "items": (2005, "multi-class", ("a", "b"), 24, CSV_ROWS),
    "tags": (2010, "multi-label", ("a", "b", "c"), 8, CSV_ROWS),
    "mnist": (2015, "multi-class", ("zero", "one", "two"), 12, IDX_TRAIN + IDX_TEST),
    "shapes": (2019, "multi-class", SHAPE_CLASSES, 20, 24),
    "pets#1": (2021, "multi-class", ("cat", "dog", "fox"), 16, 12),
}


@pytest.fixture(params=["yaml", "toml"])
def manifest(request, tmp_path, monkeypatch) -> Path:
    """The same stream as a YAML or a TOML manifest next to its data; the working directory is elsewhere."""
    root = tmp_path / "project"
    _write_data(root)
    path = root / f"stream.{request.param}"
    path.write_text(YAML_MANIFEST if request.param == "yaml" else TOML_MANIFEST)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative paths must resolve against the manifest's folder, not the cwd
    return path


def _write(tmp_path: Path, text: str, name: str = "stream.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _pets_manifest(tmp_path: Path, extra: str = "", path: str = "pets") -> Path:
    """A one-task YAML manifest over a folder `path` (relative to tmp_path), with extra task fields."""
    return _write(tmp_path, f"tasks:\n  - {{name: pets, source: folder, path: {path}, year: 2000{extra}}}\n")


# ---------------------------------------------------------------------------------------------------------
# a valid manifest: keys, meta-train / meta-test, loaded splits


def test_manifest_stream_keys(manifest):
    stream = get_stream(str(manifest))
    assert stream.name == "my-stream"
    assert [t.key.uid for t in stream.tasks] == list(EXPECTED)
    assert [t.key.name for t in stream.tasks] == ["pets", "items", "tags", "mnist", "shapes", "pets"]
    for task in stream.tasks:
        year, kind, classes, resolution, _ = EXPECTED[task.key.uid]
        assert task.key.year == year
        assert task.key.kind == TaskKind(kind)
        assert task.key.class_names == classes and task.key.num_classes == len(classes)
        assert task.key.metadata["resolution"] == resolution
    repeat = stream.tasks[-1].key
    assert repeat.occurrence == 1 and repeat.uid == "pets#1" and repeat.first_uid == "pets"
    assert stream.tasks[0].key.occurrence == 0 and stream.tasks[0].key.uid == "pets"
    assert stream.tasks[0].key.domain == "animals" and stream.tasks[1].key.domain == ""
    pets = (manifest.parent / "data" / "pets").resolve()
    assert stream.tasks[0].source == f"folder:{pets}", "paths resolve against the manifest's folder"
    assert stream.tasks[4].source == "builtin:shapes"


def test_manifest_meta_train_and_meta_test(manifest):
    stream = get_stream(str(manifest))
    assert stream.meta_test_from_year == 2015
    assert [k.uid for k in stream.meta_train_tasks] == ["pets", "items", "tags"]
    assert [k.uid for k in stream.meta_test_tasks] == ["mnist", "shapes", "pets#1"], "the boundary year is meta-test"
    assert describe_stream(stream) == {
        "name": "my-stream",
        "tasks": 6,
        "meta_train": 3,
        "meta_test": 3,
        "multi_label": 1,
        "missing": 0,
        "years": [2000, 2021],
    }


def test_manifest_events_load_real_splits(manifest):
    stream = get_stream(str(manifest))
    events = stream.events()
    assert len(events) == 2 * len(stream.tasks)
    for i, task in enumerate(stream.tasks):
        train, predict = events[2 * i], events[2 * i + 1]
        assert isinstance(train, TrainEvent) and isinstance(predict, PredictEvent)
        assert train.task == predict.task == task.key and predict.split == "dev_test"
        _, kind, classes, resolution, n_items = EXPECTED[task.key.uid]
        datasets = [train.train.materialize(), train.dev.materialize(), predict.dataset.materialize()]
        datasets.append(stream.splits(i).test)
        for data in datasets:
            assert len(data) > 0
            assert data.images.dtype == np.uint8
            assert data.images.shape[1:] == (resolution, resolution, 3), task.key.uid
            if kind == "multi-label":
                assert data.labels().shape == (len(data), len(classes))
            else:
                assert data.labels().shape == (len(data),) and data.labels().max() < len(classes)
        assert sum(len(stream.splits(i).get(s)) for s in SPLIT_NAMES) == n_items, task.key.uid
        assert len(train.train_and_dev.materialize()) == len(datasets[0]) + len(datasets[1])


def test_manifest_sources_keep_their_content(manifest):
    """Multi-label rows, the IDX official test split, ignored files and gray PNGs survive the trip."""
    stream = get_stream(str(manifest))
    uids = [t.key.uid for t in stream.tasks]
    tags = stream.splits(uids.index("tags"))
    all_tags = np.concatenate([tags.get(s).labels() for s in SPLIT_NAMES])
    per_class = [sum(c in cell.split(";") for cell in TAG_CELLS) for c in "abc"]
    assert all_tags.sum(axis=0).tolist() == per_class
    assert (all_tags.sum(axis=1) == 0).sum() == 1, "the empty `labels` cell is an image with no positive class"
    mnist = stream.splits(uids.index("mnist"))
    assert mnist.notes["official_split"] is True and len(mnist.test) == IDX_TEST
    pets = stream.splits(uids.index("pets"))
    assert pets.notes["source"]["ignored_files"] == 1 and pets.notes["corrupt_skipped"] == 0
    dog = pets.train.images[pets.train.labels() == 1]
    assert len(dog) and np.array_equal(dog[..., 0], dog[..., 2]), "a gray class becomes 3 equal channels"


def test_yaml_and_toml_manifests_are_equivalent(tmp_path):
    _write_data(tmp_path)
    from_yaml = get_stream(str(_write(tmp_path, YAML_MANIFEST, "s.yml")))
    from_toml = get_stream(str(_write(tmp_path, TOML_MANIFEST, "s.toml")))
    assert [t.key for t in from_yaml.tasks] == [t.key for t in from_toml.tasks]
    assert [dict(t.key.metadata) for t in from_yaml.tasks] == [dict(t.key.metadata) for t in from_toml.tasks]
    a, b = from_yaml.splits(3), from_toml.splits(3)
    assert np.array_equal(a.train.images, b.train.images) and np.array_equal(a.test.labels(), b.test.labels())


def test_manifest_specs_and_default_name(tmp_path):
    _write_data(tmp_path)
    text = YAML_MANIFEST.replace("name: my-stream\n", "")
    name, specs, meta_test_from_year = manifest_specs(_write(tmp_path, text, "drift.yaml"))
    assert name == "drift" and meta_test_from_year == 2015
    assert [s.name for s in specs] == ["pets", "items", "tags", "mnist", "shapes", "pets"]
    assert specs[4].options == {"n_per_class": 3, "seed": 1, "size": 16}
    stream = get_stream(str(tmp_path / "drift.yaml"))
    assert stream.name == "drift"


def test_manifest_without_meta_test_year_evaluates_every_task_as_meta_test(tmp_path):
    _write_pets(tmp_path / "pets")
    stream = get_stream(str(_pets_manifest(tmp_path)))
    assert stream.meta_test_from_year is None
    assert stream.meta_train_tasks == [] and len(stream.meta_test_tasks) == 1


def test_stream_options_split_seed_and_eval_split(manifest):
    base = get_stream(str(manifest))
    final = get_stream(str(manifest), eval_split="test", split_seed=1)
    assert all(e.split == "test" for e in final.events() if isinstance(e, PredictEvent))
    a, b = base.splits(0), final.splits(0)
    assert b.notes["seed"] == 1
    assert not np.array_equal(a.train.images, b.train.images), "another split seed draws another assignment"
    union = {img.tobytes() for s in SPLIT_NAMES for img in a.get(s).images}
    assert union == {img.tobytes() for s in SPLIT_NAMES for img in b.get(s).images}


def test_manifest_stream_is_picklable_and_reloads_the_same(manifest):
    stream = get_stream(str(manifest))
    copy = pickle.loads(pickle.dumps(stream))
    assert [t.key for t in copy.tasks] == [t.key for t in stream.tasks]
    assert np.array_equal(copy.splits(0).dev_test.images, stream.splits(0).dev_test.images)


# ---------------------------------------------------------------------------------------------------------
# bad manifests: errors name the file and the task


@pytest.mark.parametrize(
    ("text", "pieces"),
    [
        ("name: s\n", ["non-empty `tasks` list"]),
        ("name: s\ntasks: []\n", ["non-empty `tasks` list"]),
        ("tasks:\n  - just-a-name\n", ["task 0", "must be a mapping"]),
        ("tasks:\n  - {name: a, source: builtin:shapes, colour: red}\n", ["task 0", "unknown field", "colour"]),
        (
            "tasks:\n  - {name: a, source: builtin:shapes}\n  - {name: pets, source: folder}\n",
            ["task 1", "'pets'", "`path`"],
        ),
        (
            "tasks:\n  - {name: a, source: builtin:shapes, kind: multiclass}\n",
            ["task 0", "kind 'multiclass'", "multi-label"],
        ),
        ("tasks:\n  - {name: a, source: builtin}\n", ["task 0", "'a'", "builtin:letters"]),
        ("tasks:\n  - {name: a, path: x}\n", ["task 0", "missing `source`"]),
        ("tasks:\n  - {source: folder, path: x}\n", ["task 0", "missing `name`"]),
        ("tasks:\n  - {name: a, source: builtin:shapes, path: x}\n", ["task 0", "`path` is only used"]),
        ("tasks: [\n", ["not valid YAML"]),
    ],
)
def test_bad_manifest_errors_name_file_and_task(tmp_path, text, pieces):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError) as info:
        get_stream(str(path))
    message = str(info.value)
    assert str(path) in message
    for piece in pieces:
        assert piece in message, (piece, message)


def test_invalid_toml_and_wrong_suffix_and_missing_manifest(tmp_path):
    toml = _write(tmp_path, "[[tasks]\nname = ", "stream.toml")
    with pytest.raises(ValueError, match=re.escape(f"stream manifest {toml} is not valid TOML")):
        get_stream(str(toml))
    json = _write(tmp_path, "{}", "stream.json")
    with pytest.raises(ValueError, match=r"must end in \.yaml, \.yml or \.toml"):
        get_stream(str(json))
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "absent.yaml"))):
        get_stream(str(tmp_path / "absent.yaml"))
    with pytest.raises(ValueError, match="unknown stream 'no-such-stream'"):
        get_stream("no-such-stream")


def test_missing_data_folder_names_task_and_path_when_the_stream_is_built(tmp_path):
    path = _pets_manifest(tmp_path, path="data/absent")
    with pytest.raises(FileNotFoundError, match=r"task 'pets'.*" + re.escape(str(tmp_path / "data" / "absent"))):
        get_stream(str(path))


def test_missing_data_folder_with_declared_classes_names_task_and_path_when_loaded(tmp_path):
    path = _pets_manifest(tmp_path, ", kind: multi-class, classes: [cat, dog]", path="data/absent")
    stream = get_stream(str(path))  # classes and kind declared: building reads no data
    assert stream.tasks[0].key.class_names == ("cat", "dog")
    with pytest.raises(FileNotFoundError, match=r"task 'pets'.*" + re.escape(str(tmp_path / "data" / "absent"))):
        stream.events()[0].train.materialize()


def test_declared_classes_that_disagree_with_the_data_fail_when_the_task_loads(tmp_path):
    _write_pets(tmp_path / "pets")
    stream = get_stream(str(_pets_manifest(tmp_path, ", kind: multi-class, classes: [cat, dog, wolf]")))
    assert stream.tasks[0].key.class_names == ("cat", "dog", "wolf")
    with pytest.raises(ValueError, match=r"task 'pets'.*'cat', 'dog', 'fox'.*'wolf'.*fix the manifest's `classes`"):
        stream.splits(0)


def test_declared_kind_that_disagrees_with_the_data_fails(tmp_path):
    _write_pets(tmp_path / "pets")
    with pytest.raises(ValueError, match=r"task 'pets': declared kind 'multi-label'.*'multi-class'"):
        get_stream(str(_pets_manifest(tmp_path, ", kind: multi-label")))
    declared = get_stream(str(_pets_manifest(tmp_path, ", kind: multi-label, classes: [cat, dog, fox]")))
    with pytest.raises(ValueError, match="task 'pets' is multi-label but its data is multi-class"):
        declared.splits(0)


def test_declared_classes_without_kind_are_checked_against_the_data(tmp_path):
    _write_pets(tmp_path / "pets")
    with pytest.raises(ValueError, match="wolf"):
        stream = get_stream(str(_pets_manifest(tmp_path, ", classes: [cat, dog, wolf]")))
        stream.splits(0)


def test_unknown_top_level_field_is_an_error(tmp_path):
    _write_pets(tmp_path / "pets")
    path = _write(tmp_path, "meta_test_from_yaer: 2019\ntasks:\n  - {name: pets, source: folder, path: pets}\n")
    with pytest.raises(ValueError, match=r"meta_test_from_yaer"):
        get_stream(str(path))


def test_non_integer_meta_test_year_is_reported_with_the_file(tmp_path):
    _write_pets(tmp_path / "pets")
    text = "meta_test_from_year: '2019'\ntasks:\n  - {name: pets, source: folder, path: pets, year: 2000}\n"
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(str(path))):
        describe_stream(get_stream(str(path)))


@pytest.mark.parametrize(
    "entry",
    [
        "{name: pets, source: folder, path: pets, year: nineteen}",
        "{name: pets, source: folder, path: pets, options: [1]}",
        "{name: pe/ts, source: folder, path: pets}",
        "{name: pets, source: folder, path: pets, kind: multi-class, classes: catdogfox}",
    ],
    ids=["year", "options", "name", "classes-string"],
)
def test_invalid_task_values_name_file_and_task(tmp_path, entry):
    _write_pets(tmp_path / "pets")
    path = _write(tmp_path, f"tasks:\n  - {entry}\n")
    with pytest.raises(ValueError, match=re.escape(f"stream manifest {path}, task 0")):
        get_stream(str(path))


@pytest.mark.parametrize("source", ["builtin:shape", "builtin:shapes, options: {n_per_clas: 3}"])
def test_source_errors_name_the_task(tmp_path, source):
    path = _write(tmp_path, f"tasks:\n  - {{name: my_task, source: {source}}}\n")
    with pytest.raises(ValueError, match="my_task"):
        get_stream(str(path))


def test_home_relative_path_is_expanded(tmp_path, monkeypatch):
    home = tmp_path / "home"
    _write_pets(home / "pets")
    monkeypatch.setenv("HOME", str(home))
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    stream = get_stream(str(_write(manifests, "tasks:\n  - {name: pets, source: folder, path: ~/pets}\n")))
    assert stream.tasks[0].key.class_names == ("cat", "dog", "fox")


def test_get_stream_accepts_a_path_object(tmp_path):
    _write_pets(tmp_path / "pets")
    assert get_stream(_pets_manifest(tmp_path)).tasks[0].key.uid == "pets"


# ---------------------------------------------------------------------------------------------------------
# corrupt files


def test_corrupt_png_is_named_when_the_task_loads(tmp_path):
    _write_pets(tmp_path / "pets")
    bad = write_corrupt_png(tmp_path / "pets" / "dog" / "bad.png")
    stream = get_stream(str(_pets_manifest(tmp_path, ", kind: multi-class, classes: [cat, dog, fox]")))
    with pytest.raises(CorruptImageError, match=re.escape(str(bad))):
        stream.splits(0)
    with pytest.raises(CorruptImageError, match="--skip-corrupt"):
        get_stream(str(_pets_manifest(tmp_path)))  # without declared classes the build reads the data


@pytest.mark.parametrize("declared", ["", ", kind: multi-class, classes: [cat, dog, fox]"])
def test_skip_corrupt_loads_and_reports_the_skipped_count(tmp_path, declared):
    _write_pets(tmp_path / "pets")
    bad = write_corrupt_png(tmp_path / "pets" / "dog" / "bad.png")
    stream = get_stream(str(_pets_manifest(tmp_path, declared)), skip_corrupt=True)
    splits = stream.splits(0)
    assert splits.notes["corrupt_skipped"] == 1
    assert splits.notes["source"]["corrupt_files"] == [str(bad.resolve())]
    assert sum(len(splits.get(s)) for s in SPLIT_NAMES) == len(PETS) * PETS_PER_CLASS
