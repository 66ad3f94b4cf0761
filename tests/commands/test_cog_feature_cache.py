"""`lifelong cog run` shares the feature cache: another run (another data root, another seed) with the same
encoder and images reads the cached features instead of extracting them, and a set's splits link into the cache."""

from __future__ import annotations

from commands.test_cog_cli import features_set, invoke, setup  # noqa: F401  (the fixture)

from lifelong.data.feature_files import load_features


def test_a_second_run_reuses_the_cached_features(setup, tmp_path):  # noqa: F811
    root, args = setup
    first = invoke(args + ["--levels", "seen,1", "--seeds", "1"])
    assert first.exit_code == 0, first.output
    assert "features seen train" in first.output
    folder, _ = features_set(root)
    split = folder / "seen" / "train"
    assert split.is_symlink() and load_features(split).features.shape[1] == 128  # resnet_mini: 128-d features

    other = [a if a != str(root / "data") else str(tmp_path / "other-data") for a in args]  # a new data root
    second = invoke(other + ["--levels", "seen,1", "--seed", "37", "--out", str(tmp_path / "runs2")])
    assert second.exit_code == 0, second.output
    assert "features seen" not in second.output and "features level 1" not in second.output  # nothing extracted
    (index,) = (tmp_path / "other-data" / "cog-features").glob("*/cog.json")
    assert (index.parent / "seen" / "train").resolve() == split.resolve()  # the same cache folder
