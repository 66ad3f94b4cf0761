"""Run analysis: Pareto front against brute force, regret identity, forward transfer, slices, run tables.

`TASKS`, `stream_records` and `write_run` build synthetic run folders; the report tests reuse them.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lifelong.metrics import (
    aggregate_seeds,
    forward_transfer,
    forward_transfer_details,
    pareto_front,
    regret_curve,
    slices,
)
from lifelong.results import RunFolder, read_run, summarize_runs

# (name, year, domain, occurrence, evaluation items): a stream whose last two tasks repeat earlier datasets
TASKS = [
    ("digits", 1998, "ocr", 0, 300),
    ("shapes", 2001, "objects", 0, 3_000),
    ("letters", 2004, "ocr", 0, 20_000),
    ("textures", 2010, "textures", 0, 999),
    ("digits", 2019, "ocr", 1, 1_000),
    ("letters", 2020, "ocr", 1, 10_000),
]
META_TEST_FROM = 2019


def uid(name: str, occurrence: int) -> str:
    return name if occurrence == 0 else f"{name}#{occurrence}"


def stream_records(
    errors: list[float], flops: float = 1e9, curves: list[list[float]] | None = None, tasks: list[tuple] = TASKS
) -> list[dict]:
    """A train and a predict record per task, as the environment writes them."""
    records, total = [], 0.0
    for t, ((name, year, domain, occurrence, items), error) in enumerate(zip(tasks, errors, strict=True)):
        total += flops
        common = {
            "task": uid(name, occurrence),
            "task_name": name,
            "task_kind": "multi-class",
            "year": year,
            "domain": domain,
            "occurrence": occurrence,
            "meta_test": year >= META_TEST_FROM,
            "cumulative_train_flops": total,
        }
        curve = [] if curves is None else curves[t]
        records.append(
            {**common, "event": 2 * t, "type": "train", "split": "train", "error": None, "num_items": None}
            | {"train_flops": flops, "peak_parameters": 1000, "seconds": 0.1, "dev_curve": curve}
        )
        records.append(
            {**common, "event": 2 * t + 1, "type": "predict", "split": "dev_test", "error": error, "num_items": items}
            | {"train_flops": 0.0, "peak_parameters": 0, "seconds": 0.01, "inference_flops": None}
        )
    return records


def write_run(
    root: Path,
    run_id: str,
    learner: str,
    seed: int,
    errors: list[float],
    *,
    stream: str = "syn",
    flops: float = 1e9,
    curves: list[list[float]] | None = None,
    tasks: list[tuple] = TASKS,
) -> Path:
    """A run folder as `lifelong run` writes it: run.json, events.jsonl, summary.json."""
    folder = RunFolder(root / run_id)
    keys = [
        {"uid": uid(n, o), "name": n, "kind": "multi-class", "num_classes": 10, "year": y, "domain": d, "occurrence": o}
        for n, y, d, o, _ in tasks
    ]
    config = {"stream": stream, "learner": learner, "seed": seed, "eval_split": "dev_test", "learner_options": {}}
    stream_info = {"name": stream, "tasks": keys, "eval_split": "dev_test", "meta_test_from_year": META_TEST_FROM}
    folder.write_json("run.json", {"run_id": run_id, "config": config, "seed": seed, "stream": stream_info})
    for record in stream_records(errors, flops, curves, tasks):
        folder.append_record({"run_id": run_id, **record})
    folder.write_json("summary.json", {"run_id": run_id})
    return folder.path


# ------------------------------------------------------------------------------------------------ Pareto front


def dominated_brute_force(points: list[tuple[float, float]]) -> set[int]:
    """Indices dominated by another point: no worse in both coordinates and not equal."""
    return {
        i for i, (c, e) in enumerate(points) if any(c2 <= c and e2 <= e and (c2, e2) != (c, e) for c2, e2 in points)
    }


coordinates = st.one_of(st.integers(0, 5).map(float), st.floats(0, 1e15, allow_nan=False, allow_infinity=False))


@given(st.lists(st.tuples(coordinates, coordinates), max_size=40))
def test_pareto_front_matches_brute_force(points: list[tuple[float, float]]) -> None:
    front = pareto_front(points)
    assert set(front) == set(range(len(points))) - dominated_brute_force(points)
    assert len(front) == len(set(front))
    ordered = [points[i] for i in front]
    assert ordered == sorted(ordered, key=lambda p: (p[0], -p[1]))  # cheapest first, error falling
    assert all(a[1] >= b[1] for a, b in zip(ordered, ordered[1:], strict=False))


def test_pareto_ties() -> None:
    points = [(2.0, 0.5), (1.0, 0.5), (1.0, 0.5), (1.0, 0.7), (3.0, 0.2), (3.0, 0.2), (0.5, 0.9)]
    # copies of a non-dominated point both stay; equal cflop with higher error and equal error with more cflop go
    assert pareto_front(points) == [6, 1, 2, 4, 5]
    assert pareto_front(np.array(points)) == [6, 1, 2, 4, 5]
    assert pareto_front([]) == []


@pytest.mark.parametrize(
    ("points", "message"),
    [([(1.0, float("nan"))], "not finite"), ([(1.0, 2.0, 3.0)], "pairs"), ([1.0, 2.0], "pairs")],
)
def test_pareto_rejects_bad_points(points: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pareto_front(points)


# ------------------------------------------------------------------------------------------------------ regret


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=len(TASKS), max_size=len(TASKS)))
def test_regret_identity(pairs: list[tuple[float, float]]) -> None:
    method, reference = zip(*pairs, strict=True)
    curve = regret_curve(stream_records(list(method)), stream_records(list(reference)))
    differences = np.subtract(method, reference)
    assert curve.shape == (len(TASKS),)
    assert curve[-1] == pytest.approx(differences.sum(), abs=1e-12)
    assert np.diff(curve, prepend=0.0) == pytest.approx(differences, abs=1e-12)


def test_regret_follows_the_method_stream_order() -> None:
    method = stream_records([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    reference = stream_records([0.5] * 6)
    reference_reordered = sorted(reference, key=lambda r: -r["event"])  # order of the reference does not matter
    assert regret_curve(method, reference_reordered) == pytest.approx([-0.4, -0.7, -0.9, -1.0, -1.0, -0.9])
    assert regret_curve(reference, reference) == pytest.approx(np.zeros(6))


def test_regret_names_the_tasks_only_one_run_evaluated() -> None:
    method = stream_records([0.1] * 6)
    reference = stream_records([0.2] * 5, tasks=TASKS[:5])
    with pytest.raises(ValueError, match=r"only the method run evaluated 'letters#1'"):
        regret_curve(method, reference)
    with pytest.raises(ValueError, match=r"only the reference run evaluated 'letters#1'"):
        regret_curve(reference, method)
    with pytest.raises(ValueError, match="more than once"):
        regret_curve(method + method, method)


# -------------------------------------------------------------------------------------------- forward transfer


def test_forward_transfer_hand_built() -> None:
    curves = [[0.5, 0.3, 0.1], [0.4], [0.2, 0.2], [0.9], [0.2, 0.1, 0.0], [0.1, 0.1]]
    records = stream_records([0.1] * 6, curves=curves)
    # digits: AUC_1 = mean(0.5, 0.7, 0.9) = 0.7, AUC_2 = mean(0.8, 0.9, 1.0) = 0.9: FT = 0.2 / 0.3
    # letters: AUC_1 = 0.8, AUC_2 = 0.9: FT = 0.1 / 0.2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = forward_transfer(records)
    assert values == pytest.approx({"digits": 2 / 3, "letters": 0.5})


def test_forward_transfer_spec_formula_and_negative_transfer() -> None:
    rng = np.random.default_rng(0)
    curves = [list(rng.uniform(0.05, 0.95, size=k)) for k in (3, 1, 4, 2, 5, 3)]
    values, skipped = forward_transfer_details(stream_records([0.1] * 6, curves=curves))
    for name, (first, second) in {"digits": (0, 4), "letters": (2, 5)}.items():
        auc1, auc2 = 1 - np.mean(curves[first]), 1 - np.mean(curves[second])
        assert values[name] == pytest.approx((auc2 - auc1) / (1 - auc1))
    assert skipped == {}
    worse = stream_records([0.1] * 6, curves=[[0.2], [0.2], [0.2], [0.2], [0.6], [0.2]])
    assert forward_transfer(worse)["digits"] == pytest.approx((0.4 - 0.8) / 0.2)


def test_forward_transfer_skips_datasets_without_curves_and_says_so() -> None:
    curves = [[0.5], [0.4], [], [0.9], [0.2], [0.1]]  # letters has no curve for its first occurrence
    with pytest.warns(UserWarning, match=r"'letters': no dev curve for the first occurrence"):
        values = forward_transfer(stream_records([0.1] * 6, curves=curves))
    assert values == pytest.approx({"digits": (0.8 - 0.5) / 0.5})
    perfect = [[0.0], [0.4], [0.1], [0.9], [0.2], [0.1]]
    values, skipped = forward_transfer_details(stream_records([0.1] * 6, curves=perfect))
    assert "digits" not in values and "undefined" in skipped["digits"]
    assert forward_transfer_details(stream_records([0.1] * 4, tasks=TASKS[:4])) == ({}, {})  # nothing repeats


# ------------------------------------------------------------------------------------------------------ slices


def test_slices_by_domain() -> None:
    records = stream_records([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    result = slices(records)
    assert list(result) == ["objects", "ocr", "textures"]
    assert result["ocr"] == {
        "mean_error": pytest.approx(0.375),
        "tasks": ["digits", "letters", "digits#1", "letters#1"],
    }
    assert result["textures"]["mean_error"] == pytest.approx(0.4)
    meta_test = slices(records, meta_test_only=True)
    assert list(meta_test) == ["ocr"] and meta_test["ocr"]["mean_error"] == pytest.approx(0.55)
    records[1]["domain"] = ""
    assert slices(records)["(none)"]["tasks"] == ["digits"]


def test_slices_by_size_default_bins_and_values() -> None:
    records = stream_records([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])  # items 300, 3000, 20000, 999, 1000, 10000
    result = slices(records, "size")
    assert list(result) == ["< 1,000", "1,000-10,000", ">= 10,000"]
    assert result["< 1,000"]["tasks"] == ["digits", "textures"]
    assert result["1,000-10,000"]["tasks"] == ["shapes", "digits#1"]  # 1,000 <= n < 10,000
    assert result[">= 10,000"]["mean_error"] == pytest.approx(0.45)
    sizes = {"digits": 100, "shapes": 100, "textures": 100, "letters": 100, "letters#1": 900}
    by_name = slices(records, "size", bins=[500], values=sizes)  # a name covers every occurrence, a uid wins over it
    assert by_name == {
        "< 500": {"mean_error": pytest.approx(0.3), "tasks": ["digits", "shapes", "letters", "textures", "digits#1"]},
        ">= 500": {"mean_error": pytest.approx(0.6), "tasks": ["letters#1"]},
    }


def test_slices_by_resolution() -> None:
    records = stream_records([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    with pytest.raises(ValueError, match="no resolution known for tasks"):
        slices(records, "resolution")
    resolutions = {"digits": 8, "shapes": 32, "letters": 28, "textures": 64}
    assert list(slices(records, "resolution", values=resolutions)) == ["8", "28", "32", "64"]
    assert list(slices(records, "resolution", bins=[32], values=resolutions)) == ["< 32", ">= 32"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key": "year"}, "one of"),
        ({"key": "domain", "bins": [1]}, "no bins"),
        ({"key": "size", "bins": [10, 5]}, "ascending"),
        ({"key": "size", "bins": []}, "ascending"),
    ],
)
def test_slices_reject_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        slices(stream_records([0.1] * 6), **kwargs)


# ------------------------------------------------------------------------------------------------- run tables


def test_summarize_and_aggregate_seeds(tmp_path: Path) -> None:
    dirs = [
        write_run(tmp_path, "syn-independent-seed0", "independent", 0, [0.1, 0.2, 0.3, 0.4, 0.5, 0.7], flops=2e9),
        write_run(tmp_path, "syn-independent-seed1", "independent", 1, [0.1, 0.2, 0.3, 0.4, 0.3, 0.5], flops=4e9),
        write_run(tmp_path, "syn-finetune-seed0", "finetune", 0, [0.1, 0.1, 0.1, 0.1, 0.1, 0.1]),
    ]
    rows = summarize_runs(dirs)
    assert [(r["run_id"], r["learner"], r["seed"], r["stream"]) for r in rows] == [
        ("syn-independent-seed0", "independent", 0, "syn"),
        ("syn-independent-seed1", "independent", 1, "syn"),
        ("syn-finetune-seed0", "finetune", 0, "syn"),
    ]
    assert rows[0]["meta_test_mean_error"] == pytest.approx(0.6) and rows[0]["cflop"] == pytest.approx(12e9)
    assert (rows[0]["num_tasks"], rows[0]["num_evaluated"], rows[0]["num_meta_test"]) == (6, 6, 2)
    groups = aggregate_seeds(rows)
    assert [(g["learner"], g["seeds"]) for g in groups] == [("independent", [0, 1]), ("finetune", [0])]
    assert groups[0]["meta_test_mean_error_mean"] == pytest.approx(0.5)
    assert groups[0]["meta_test_mean_error_std"] == pytest.approx(np.std([0.6, 0.4], ddof=1))
    assert groups[0]["cflop_mean"] == pytest.approx(18e9) and groups[0]["cflop_std"] == pytest.approx(
        np.std([12e9, 24e9], ddof=1)
    )
    assert groups[1]["meta_test_mean_error_std"] is None and groups[1]["cflop_std"] is None
    with pytest.raises(ValueError, match="several runs with seed"):
        aggregate_seeds(rows + rows[:1])


def test_reading_bad_run_folders(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_run(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()  # reading never creates folders
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no events.jsonl"):
        summarize_runs([tmp_path / "empty"])
    folder = write_run(tmp_path, "r", "independent", 0, [0.1] * 6)
    (folder / "run.json").write_text(json.dumps({"run_id": "r"}))
    with pytest.raises(ValueError, match="no 'config' object"):
        read_run(folder)
    (folder / "run.json").unlink()
    with pytest.raises(FileNotFoundError, match="run.json"):
        read_run(folder)


def test_one_learner_with_other_options_is_another_setting_aggregated_apart() -> None:
    from lifelong.results.runs import setting_of

    assert setting_of("independent", {}) == "independent"
    options = {"trials": 8, "search": "gp-ucb", "checkpoint": "/a/b/chars.pt", "lr_range": [0.001, 0.1]}
    assert setting_of("pretrained", options) == (
        "pretrained checkpoint=chars.pt lr_range=[0.001, 0.1] search=gp-ucb trials=8"
    )
    rows = [
        {
            "stream": "s",
            "learner": "independent",
            "setting": setting,
            "seed": seed,
            "meta_test_mean_error": error,
            "cflop": 1.0,
        }
        for setting, seed, error in [
            ("independent trials=8", 0, 0.5),
            ("independent search=gp-ucb trials=8", 0, 0.3),
            ("independent trials=8", 1, 0.7),
        ]
    ]
    groups = aggregate_seeds(rows)  # the same learner and seed twice, but two settings: no clash
    assert [(g["setting"], g["learner"], g["seeds"]) for g in groups] == [
        ("independent trials=8", "independent", [0, 1]),
        ("independent search=gp-ucb trials=8", "independent", [0]),
    ]
    assert groups[0]["meta_test_mean_error_mean"] == pytest.approx(0.6)
