"""kNN relatedness: agreement with scikit-learn, subsets, candidate ranking and the random-init candidate."""

import numpy as np
import pytest
from sklearn.neighbors import KNeighborsClassifier

from lifelong.core import ArrayDataset, TaskKey
from lifelong.training.models import make_model
from lifelong.training.relatedness import (
    RANDOM_INIT,
    knn_score,
    knn_votes,
    rank_candidates,
    score_candidates,
    subsample,
)


def _unit(x):
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_knn_score_equals_scikit_learn_on_fixed_features():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 16))
    train_y, dev_y = rng.integers(0, 4, 300), rng.integers(0, 4, 120)
    train_x = centres[train_y] + rng.normal(scale=1.5, size=(300, 16))
    dev_x = centres[dev_y] + rng.normal(scale=1.5, size=(120, 16))
    reference = KNeighborsClassifier(n_neighbors=5).fit(_unit(train_x), train_y)
    expected = float(np.mean(reference.predict(_unit(dev_x)) == dev_y))
    score = knn_score(train_x, train_y, dev_x, dev_y, kind="multi-class", num_classes=4)
    assert score == expected
    assert 0.25 < score < 1.0  # neither chance nor trivially perfect: the comparison means something
    votes = knn_votes(train_x, train_y, dev_x, kind="multi-class", num_classes=4)
    np.testing.assert_allclose(votes, reference.predict_proba(_unit(dev_x)))


def test_multilabel_votes_are_per_label_neighbour_fractions():
    rng = np.random.default_rng(1)
    train_x, dev_x = rng.normal(size=(80, 8)), rng.normal(size=(30, 8))
    train_y = rng.integers(0, 2, (80, 3)).astype(np.uint8)
    votes = knn_votes(train_x, train_y, dev_x, kind="multi-label", num_classes=3, k=5)
    reference = KNeighborsClassifier(n_neighbors=5).fit(_unit(train_x), train_y)
    expected = np.stack([p[:, 1] for p in reference.predict_proba(_unit(dev_x))], axis=1)
    np.testing.assert_allclose(votes, expected)


def test_fewer_train_items_than_k_use_them_all():
    votes = knn_votes(np.eye(3), np.array([0, 1, 1]), np.ones((2, 3)), kind="multi-class", num_classes=2, k=5)
    np.testing.assert_allclose(votes, [[1 / 3, 2 / 3]] * 2)


def test_subsample_is_seeded_bounded_and_in_stored_order():
    key = TaskKey("t", "multi-class", 2)
    data = ArrayDataset(key, "train", np.arange(50, dtype=np.uint8).reshape(50, 1, 1, 1), np.arange(50) % 2)
    a, b, c = subsample(data, 10, 3), subsample(data, 10, 3), subsample(data, 10, 4)
    assert len(a) == 10 and np.array_equal(a.images, b.images) and not np.array_equal(a.images, c.images)
    assert np.all(np.diff(a.images.ravel().astype(int)) > 0)
    assert subsample(data, 100, 0) is data


def _halves_task(n, seed, vertical):
    """Two classes told apart by which half (top/bottom, or left/right) of an 8x8 image is bright."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    images = rng.integers(0, 40, (n, 8, 8, 3)).astype(np.uint8)
    for i, y in enumerate(labels):
        if vertical:
            images[i, 4 * y : 4 * y + 4] = 230
        else:
            images[i, :, 4 * y : 4 * y + 4] = 230
    key = TaskKey("halves", "multi-class", 2)
    return ArrayDataset(key, "train", images, labels)


def test_candidates_are_ranked_and_random_init_is_always_scored():
    train, dev = _halves_task(60, 0, True), _halves_task(40, 1, True)
    backbone = make_model("resnet_mini", 2, seed=5).backbone.state_dict()
    options = dict(architecture="resnet_mini", resolution=None, seed=0)
    result = score_candidates({"past": backbone}, train, dev, **options)
    assert set(result.scores) == {"past", RANDOM_INIT}
    assert result.order == ("past", RANDOM_INIT)
    assert result.feature_flops > 0 and (result.num_train, result.num_dev) == (60, 40)
    ranking = rank_candidates({"past": backbone}, train, dev, **options)
    assert [name for name, _ in ranking] == [n for n, _ in result.ranking()]
    assert ranking[0][1] >= ranking[1][1]
    assert score_candidates({"past": backbone}, train, dev, **options).scores == result.scores
    limited = score_candidates({}, train, dev, **options, max_train=10, max_dev=7)
    assert (limited.num_train, limited.num_dev) == (10, 7)


def test_ties_keep_candidate_order_and_nan_goes_last():
    from lifelong.training.relatedness import Relatedness

    r = Relatedness({"b": 0.5, "a": 0.5, "c": float("nan"), RANDOM_INIT: 0.4}, 0.0, 1, 1, ("b", "a", "c", RANDOM_INIT))
    assert [n for n, _ in r.ranking()] == ["b", "a", RANDOM_INIT, "c"]
    assert r.best == "b"


def test_random_init_is_chosen_only_when_allowed_or_alone():
    from lifelong.training.relatedness import Relatedness

    r = Relatedness({"old": 0.3, "older": 0.6, RANDOM_INIT: 0.9}, 0.0, 1, 1, ("old", "older", RANDOM_INIT))
    assert r.best == RANDOM_INIT == r.choice(allow_random_init=True)
    assert r.choice(allow_random_init=False) == "older", "the reference: the best past model, never random init"
    alone = Relatedness({RANDOM_INIT: 0.2}, 0.0, 1, 1, (RANDOM_INIT,))
    assert alone.choice(allow_random_init=False) == RANDOM_INIT, "no past model: random init it is"
    unscored = Relatedness({"old": float("nan"), RANDOM_INIT: 0.5}, 0.0, 1, 1, ("old", RANDOM_INIT))
    assert unscored.choice(allow_random_init=False) == "old"


def test_bad_inputs_say_what_to_do():
    train = _halves_task(20, 0, True)
    with pytest.raises(ValueError, match="random-init"):
        score_candidates({RANDOM_INIT: {}}, train, train, architecture="resnet_mini", resolution=None, seed=0)
    wrong = make_model("resnet18", 2).backbone.state_dict()
    with pytest.raises(ValueError, match="do not fit architecture"):
        score_candidates({"x": wrong}, train, train, architecture="resnet_mini", resolution=None, seed=0)
