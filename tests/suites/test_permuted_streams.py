"""`--stream permuted-mnist` / `rotated-mnist`: N experiences of one label space, each under its own fixed transform,
train and test from the dataset's official split, read from where `lifelong data fetch` installs it."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from fetch_fixtures import mnist_files, write_files
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.suites.clear import get_temporal_stream

runner = CliRunner()


@pytest.fixture
def root(tmp_path):
    """A data root with a tiny MNIST installed as `data fetch` leaves it (plain IDX files in <root>/mnist)."""
    files, arrays = mnist_files(train=20, test=10)
    write_files(tmp_path / "data" / "mnist", {n.removesuffix(".gz"): gzip.decompress(b) for n, b in files.items()})
    return tmp_path / "data", arrays


def splits(root, stream="permuted-mnist", **options):
    s = get_temporal_stream(stream, data_root=root, protocol="iid", **options)
    return s, [t.load() for t in s.tasks]


def test_permuted_experiences_are_bijections_shared_by_train_and_test_and_differ(root):
    data_root, arrays = root
    stream, tasks = splits(data_root, experiences=3, seed=4)
    assert stream.name == "permuted-mnist-iid" and len(tasks) == 3
    test_images = arrays["test_images"].reshape(10, -1)
    perms = []
    for task in tasks:
        # recover the permutation from the test images by brute force: output pixel i equals input pixel p[i]
        assert task.test.images.shape[1:] == (28, 28, 1)  # grayscale stays one channel (models replicate it)
        got = task.test.images[..., 0].reshape(10, -1)
        perm = np.array([np.flatnonzero((test_images == got[:, [i]]).all(axis=0))[0] for i in range(784)])
        assert sorted(perm) == list(range(784))  # a bijection
        train = task.train.images[..., 0].reshape(len(task.train.images), -1)
        assert any((train == arrays["train_images"].reshape(20, -1)[j][perm]).all(axis=1).any() for j in range(20))
        assert np.array_equal(np.sort(task.test.labels()), np.sort(arrays["test_labels"]))  # labels unchanged
        assert task.test.labels().tolist() == arrays["test_labels"].tolist()
        perms.append(perm)
    assert not np.array_equal(perms[0], np.arange(784))  # the first experience is permuted too (Avalanche's rule)
    assert len({p.tobytes() for p in perms}) == 3
    _, again = splits(data_root, experiences=3, seed=4)
    assert np.array_equal(again[1].test.images, tasks[1].test.images)  # fixed by the seed
    _, other = splits(data_root, experiences=3, seed=5)
    assert not np.array_equal(other[1].test.images, tasks[1].test.images)


def test_rotated_experiences_turn_by_evenly_spaced_angles(root):
    data_root, arrays = root
    _, tasks = splits(data_root, "rotated-mnist", experiences=4, max_angle=360)  # 0, 90, 180, 270 degrees
    for k, task in enumerate(tasks):
        expected = np.rot90(arrays["test_images"], k, axes=(1, 2))  # counter-clockwise, an independent rotation
        assert np.array_equal(task.test.images[..., 0], expected)
        assert task.test.labels().tolist() == arrays["test_labels"].tolist()


def test_max_items_caps_each_split_and_the_label_space_is_the_ten_digits(root):
    data_root, _ = root
    stream, tasks = splits(data_root, experiences=2, max_items=5)
    assert stream.tasks[0].key.class_names == tuple("0123456789")
    assert all(len(t.test.images) == 5 and len(t.train.images) + len(t.dev.images) == 5 for t in tasks)


def test_a_missing_dataset_names_the_fetch_command(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"lifelong data fetch mnist --from DIR"):
        get_temporal_stream("permuted-mnist", data_root=tmp_path, protocol="iid")
    with pytest.raises(ValueError, match="dataset=emnist"):
        get_temporal_stream("rotated-mnist", data_root=tmp_path, protocol="iid", dataset="emnist")


def test_the_fashion_variant_reads_its_own_folder_and_names_its_stream(tmp_path):
    files, _ = mnist_files(train=6, test=4)
    write_files(tmp_path / "fashion_mnist", files)  # gzipped, as Debian's package or a fetch of the .gz files
    stream = get_temporal_stream("permuted-mnist", data_root=tmp_path, protocol="streaming", dataset="fashion_mnist")
    assert stream.name == "permuted-fashion-mnist-streaming" and stream.tasks[0].key.class_names[0] == "T-shirt/top"


def test_a_two_experience_finetune_run_finishes(root, tmp_path):
    data_root, _ = root
    args = ["run", "--stream", "permuted-mnist", "-s", "experiences=2", "--data-root", str(data_root),
            "--learner", "finetune", "--protocol", "iid", "-o", "epochs=1", "--out", str(tmp_path / "out")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "permuted-mnist" in result.output


def test_permuted_tasks_are_not_augmented_but_rotated_ones_are(root, monkeypatch):
    from lifelong.core.events import TrainEvent
    from lifelong.learners import continual
    from lifelong.learners.continual_methods import FinetuneLearner

    seen = []
    real = continual.train_continual

    def spy(*args, **kwargs):
        seen.append(kwargs["augment"])
        return real(*args, **kwargs)

    monkeypatch.setattr(continual, "train_continual", spy)
    data_root, _ = root
    for name, augmented in (("permuted-mnist", False), ("rotated-mnist", True)):
        stream = get_temporal_stream(name, data_root=data_root, protocol="iid", experiences=2)
        event = next(e for e in stream.events() if isinstance(e, TrainEvent))
        assert event.task.metadata.get("spatial", True) is augmented
        learner = FinetuneLearner(epochs=1, batch_size=8)  # augment=true by default
        learner.train(event, learner.init(0))
        assert seen[-1] is augmented
