import numpy as np
import pytest
from _prereq import FASHION_MNIST as FASHION
from _prereq import needs_fashion_mnist
from support import write_idx

from lifelong.core.tasks import TaskKind
from lifelong.data.images import CorruptImageError
from lifelong.data.sources import describe, load_source
from lifelong.data.sources.idx import read_idx


@needs_fashion_mnist
def test_real_fashion_mnist_from_debian():
    data = load_source("fashion-mnist")
    assert len(data) == 70000 and data.images.shape == (70000, 28, 28, 1)
    assert data.num_classes == 10 and data.class_names[0] == "T-shirt/top"
    assert (data.official_split == "train").sum() == 60000 and (data.official_split == "test").sum() == 10000
    assert np.array_equal(np.bincount(data.labels), np.full(10, 7000))
    assert data.ids[60000] == "t10k-images-idx3-ubyte.gz[0]"
    same = load_source(f"idx:{FASHION}")
    assert np.array_equal(same.labels, data.labels) and same.class_names == tuple(str(k) for k in range(10))


@pytest.mark.parametrize("compress", [False, True])
def test_tiny_idx_folder_gz_and_plain(tmp_path, compress):
    suffix = ".gz" if compress else ""
    rng = np.random.default_rng(0)
    train, test = rng.integers(0, 256, (6, 4, 3)), rng.integers(0, 256, (2, 4, 3))
    write_idx(tmp_path / f"train-images-idx3-ubyte{suffix}", train, compress)
    write_idx(tmp_path / f"train-labels-idx1-ubyte{suffix}", np.array([0, 1, 2, 0, 1, 2]), compress)
    write_idx(tmp_path / f"t10k-images-idx3-ubyte{suffix}", test, compress)
    write_idx(tmp_path / f"t10k-labels-idx1-ubyte{suffix}", np.array([2, 1]), compress)
    data = load_source(f"idx:{tmp_path}", class_names=["a", "b", "c"])
    assert data.images.shape == (8, 4, 3, 1)
    assert np.array_equal(data.images[6, :, :, 0], test[0])
    assert data.labels.tolist() == [0, 1, 2, 0, 1, 2, 2, 1]
    assert data.official_split.tolist() == ["train"] * 6 + ["test"] * 2
    assert data.class_names == ("a", "b", "c")


def test_truncated_idx_file_is_named(tmp_path):
    path = tmp_path / "train-images-idx3-ubyte"
    write_idx(path, np.zeros((3, 4, 4)), compress=False)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(CorruptImageError, match="train-images-idx3-ubyte.*truncated"):
        read_idx(path, 3)


def test_image_folder_with_sorted_class_names(tmp_path, write_png):
    for i, (cls, value) in enumerate([("dog", 10), ("cat", 20), ("cat", 30), ("ant", 40)]):
        write_png(tmp_path / cls / f"{i}.png", value, size=(5 + i, 4))
    (tmp_path / "cat" / "README.txt").write_text("not an image")
    data = load_source(f"folder:{tmp_path}")
    assert data.class_names == ("ant", "cat", "dog")
    assert data.labels.tolist() == [0, 1, 1, 2]
    assert data.ids[0].endswith("ant/3.png") and data.images[0].shape == (4, 8, 3)
    assert data.notes["ignored_files"] == 1 and data.notes["corrupt_skipped"] == 0
    summary = describe(data)
    assert summary["per_class"] == {"ant": 1, "cat": 2, "dog": 1}
    assert summary["image_size"]["min_width"] == 5 and summary["image_size"]["max_width"] == 8
    assert summary["channels"] == [3] and summary["kind"] == "multi-class"


def test_corrupt_image_named_or_skipped_and_counted(tmp_path, write_png, write_corrupt):
    write_png(tmp_path / "a" / "good.png", 1)
    write_png(tmp_path / "b" / "good.png", 2)
    bad = write_corrupt(tmp_path / "b" / "bad.png")
    with pytest.raises(CorruptImageError, match=str(bad)):
        load_source(f"folder:{tmp_path}")
    data = load_source(f"folder:{tmp_path}", skip_corrupt=True)
    assert len(data) == 2 and data.labels.tolist() == [0, 1]
    assert data.notes["corrupt_skipped"] == 1 and data.notes["corrupt_files"] == [str(bad)]


def test_csv_manifest_multi_class_with_relative_paths_and_split(tmp_path, write_png, write_corrupt):
    write_png(tmp_path / "img" / "x.png", 5, mode="L")
    write_png(tmp_path / "img" / "y.png", 6)
    write_png(tmp_path / "img" / "z.png", 7)
    write_corrupt(tmp_path / "img" / "broken.png")
    rows = ["path,label,split", "img/x.png,10,train", "img/y.png,2,train", "img/z.png,2,test", "img/broken.png,10,val"]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    data = load_source(f"csv:{tmp_path / 'm.csv'}", skip_corrupt=True)
    assert data.class_names == ("2", "10"), "integer class names sort numerically"
    assert data.labels.tolist() == [1, 0, 0]
    assert data.official_split.tolist() == ["train", "train", "test"]
    assert data.images[0].shape == (5, 6, 1)
    assert data.notes["corrupt_skipped"] == 1
    with pytest.raises(CorruptImageError, match="broken.png"):
        load_source(f"csv:{tmp_path / 'm.csv'}")


def test_csv_manifest_multi_label(tmp_path, write_png):
    for name, value in [("p.png", 1), ("q.png", 2), ("r.png", 3)]:
        write_png(tmp_path / name, value)
    (tmp_path / "m.csv").write_text("path,labels\np.png,cat;dog\nq.png,dog\nr.png,\n")
    data = load_source(f"csv:{tmp_path / 'm.csv'}")
    assert data.kind is TaskKind.MULTI_LABEL and data.class_names == ("cat", "dog")
    assert data.labels.tolist() == [[1, 1], [0, 1], [0, 0]]
    assert describe(data)["per_class"] == {"cat": 1, "dog": 2}


def test_csv_manifest_errors_name_the_row(tmp_path, write_png):
    write_png(tmp_path / "p.png", 1)
    manifest = tmp_path / "m.csv"
    manifest.write_text("path,label\np.png,cat\nmissing.png,dog\n")
    with pytest.raises(FileNotFoundError, match=r"m.csv:3.*missing.png"):
        load_source(f"csv:{manifest}")
    manifest.write_text("path,label\np.png,cow\n")
    with pytest.raises(ValueError, match=r"m.csv:2: label 'cow' is not one of the 2 class_names"):
        load_source(f"csv:{manifest}", class_names=["cat", "dog"])
    manifest.write_text("file,label\np.png,cat\n")
    with pytest.raises(ValueError, match=r"no 'path' column \(columns: \['file', 'label'\]\)"):
        load_source(f"csv:{manifest}")
    manifest.write_text("path,label,split\np.png,cat,holdout\n")
    with pytest.raises(ValueError, match="m.csv:2: split 'holdout'"):
        load_source(f"csv:{manifest}")


@pytest.mark.parametrize("spec", ["folder:{}/nowhere", "csv:{}/nowhere.csv", "idx:{}/nowhere"])
def test_missing_path_is_named(tmp_path, spec):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        load_source(spec.format(tmp_path))


def test_unknown_source_form_lists_the_forms():
    with pytest.raises(ValueError, match="builtin:NAME"):
        load_source("ftp:somewhere")


@pytest.mark.parametrize("state", ["absent", "empty"])
def test_missing_or_empty_fashion_mnist_names_the_debian_package(tmp_path, monkeypatch, state):
    import lifelong.data.sources.idx as idx

    folder = tmp_path / "fashion-mnist"
    if state == "empty":
        folder.mkdir()
    monkeypatch.setattr(idx, "FASHION_MNIST_DIRS", (folder,))
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist") as error:
        load_source("fashion-mnist")
    assert "'" not in str(error.value).split("`")[0]  # the path is written plainly, not as a Python repr
