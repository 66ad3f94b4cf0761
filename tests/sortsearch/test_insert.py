"""Insertion flows on a small planted benchmark: sort, plan, add models and samples, observed vs estimated."""

import numpy as np
import pytest

from lifelong.sortsearch.insert import (
    add_full_model,
    add_model,
    add_samples,
    evaluate_model,
    plan_model,
    plan_samples,
    sort_store,
)
from lifelong.sortsearch.store import BenchStore


def planted(m=40, n=400, seed=0):
    """Model i is right on sample j iff ability_i > difficulty_j, with a little noise: a near-step structure."""
    rng = np.random.default_rng(seed)
    ability, difficulty = rng.random(m), rng.random(n)
    truth = (ability[:, None] > difficulty[None, :]).astype(np.uint8)
    flip = rng.random((m, n)) < 0.02
    return np.where(flip, 1 - truth, truth).astype(np.uint8)


def store_with(tmp_path, truth, ranking):
    store = BenchStore.create(tmp_path / "store", chunk_models=8, chunk_samples=64)
    store.add_samples(
        [{"source": "t", "domain": "d", "label": 0, "content_hash": f"h{j}"} for j in range(truth.shape[1])]
    )
    for i in range(ranking):
        add_full_model(store, f"rank{i}", truth[i])
    return store


def test_models_added_from_a_small_budget_get_close_estimates(tmp_path):
    truth = planted()
    store = store_with(tmp_path, truth, ranking=25)
    version = sort_store(store)
    assert version == store.latest_sort()[0]
    plan = plan_model(store, 40)
    assert plan.sample_ids.size == 40 and len(set(plan.sample_ids.tolist())) == 40
    errors = []
    for i in range(25, 40):
        model_id, estimate = add_model(store, f"new{i}", plan, truth[i, plan.sample_ids])
        errors.append(abs(estimate - truth[i].mean()))
        acc = store.accuracies([model_id])[model_id]
        assert acc.kind == "estimated" and acc.observed_fraction == pytest.approx(40 / 400)
        observed = np.unpackbits(store.read_observed([model_id]), axis=1, count=400)[0]
        assert observed.sum() == 40 and observed[plan.sample_ids].all()
        row = np.unpackbits(store.read_rows([model_id]), axis=1, count=400)[0]
        assert np.array_equal(row[plan.sample_ids], truth[i, plan.sample_ids])  # facts kept as observed
    assert np.mean(errors) < 0.05
    assert store.check() == []


def test_callable_model_is_evaluated_on_exactly_the_planned_samples(tmp_path):
    truth = planted()
    store = store_with(tmp_path, truth, ranking=20)
    sort_store(store)
    seen = []

    def model(ids):
        seen.append(ids.copy())
        return truth[30, ids]

    model_id, estimate = evaluate_model(store, "callable", model, 32)
    assert len(seen) == 1 and np.array_equal(seen[0], plan_model(store, 32).sample_ids)
    assert abs(estimate - truth[30].mean()) < 0.1


def test_samples_added_from_a_few_models_are_estimated_for_the_rest(tmp_path):
    truth = planted(m=40, n=460)
    store = store_with(tmp_path, truth[:, :400], ranking=40)
    plan = plan_samples(store, 10)
    assert plan.model_ids.size == 10
    records = [{"source": "t", "domain": "new", "label": 0, "content_hash": f"new{j}"} for j in range(60)]
    ids = add_samples(store, records, plan, truth[plan.model_ids][:, 400:])
    assert ids == list(range(400, 460))
    rows = np.unpackbits(store.read_rows(np.arange(40)), axis=1, count=460)[:, 400:]
    assert np.abs(rows.astype(int) - truth[:, 400:]).mean() < 0.15  # the paper: sample insertion MAE < 0.15
    observed = np.unpackbits(store.read_observed(np.arange(40)), axis=1, count=460)[:, 400:]
    assert observed[plan.model_ids].all() and observed.sum() == 10 * 60


def test_bad_results_and_plans_are_refused(tmp_path):
    truth = planted()
    store = store_with(tmp_path, truth, ranking=10)
    with pytest.raises(LookupError):
        plan_model(store, 10)
    sort_store(store)
    plan = plan_model(store, 10)
    with pytest.raises(ValueError, match="expected 10 outcomes"):
        add_model(store, "short", plan, np.ones(9))
    with pytest.raises(ValueError, match="must be 0 or 1"):
        add_model(store, "bad", plan, np.full(10, 2))
    with pytest.raises(ValueError, match="budget"):
        plan_model(store, 401)


def test_record_estimates_registers_many_predicted_rows_at_once(tmp_path):
    truth = planted()
    store = store_with(tmp_path, truth, ranking=10)
    version = sort_store(store)
    ids = store.add_models([f"p{i}" for i in range(5)], rows=np.packbits(truth[10:15], axis=1), observed=False)
    assert {store.accuracies(ids)[i].kind for i in ids} == {"mixed"}
    store.record_estimates(ids, [100, 120, 140, 160, 180], version, "dp-uniform", 40)
    assert {store.accuracies(ids)[i].kind for i in ids} == {"estimated"}
    assert store.check() == []
    with pytest.raises(ValueError, match="sort version 99 does not exist"):
        store.record_estimates(ids, [1] * 5, 99, "dp-uniform", 40)
    with pytest.raises(ValueError, match="one threshold per model"):
        store.record_estimates(ids, [1, 2], version, "dp-uniform", 40)


def test_an_added_model_reports_the_best_estimate_with_its_interval_around_it(tmp_path):
    """Issue 11: the leaderboard showed the threshold's k/n while the interval was centred on k/n + mean residual."""
    from lifelong.sortsearch.intervals import accuracy_interval
    from lifelong.sortsearch.search import dp_threshold, extrapolate

    truth = planted(m=60, n=400, seed=3)
    store = store_with(tmp_path, truth, ranking=25)
    sort_store(store)
    for sampling in ("uniform", "random"):
        plan = plan_model(store, 40, sampling=sampling, seed=1)
        for i in range(25, 60, 7):
            outcomes = truth[i, plan.sample_ids]
            model_id, estimate = add_model(store, f"{sampling}{i}", plan, outcomes)
            acc = store.accuracies([model_id])[model_id]
            k = extrapolate(dp_threshold(outcomes[None]), plan.positions, 400)
            expected = accuracy_interval(outcomes[None], plan.positions, 400, k=k, sampling=sampling)
            assert acc.accuracy == estimate == pytest.approx(expected.estimate[0])
            assert acc.low == pytest.approx(expected.low[0]) and acc.high == pytest.approx(expected.high[0])
            assert acc.low <= acc.accuracy <= acc.high
            assert acc.threshold_accuracy == pytest.approx(k[0] / 400)


def test_an_estimate_carries_over_to_samples_added_later(tmp_path):
    truth = planted(m=40, n=460)
    store = store_with(tmp_path, truth[:, :400], ranking=30)
    sort_store(store)
    model_id, _ = add_model(store, "new", plan_model(store, 40), truth[35, plan_model(store, 40).sample_ids])
    before = store.accuracies([model_id])[model_id]
    plan = plan_samples(store, 10)
    records = [{"source": "t", "domain": "new", "label": 0, "content_hash": f"new{j}"} for j in range(60)]
    add_samples(store, records, plan, truth[plan.model_ids][:, 400:])
    after = store.accuracies([model_id])[model_id]
    later = np.unpackbits(store.read_rows([model_id]), axis=1, count=460)[0, 400:].sum()
    assert after.kind == "estimated"
    assert after.accuracy == pytest.approx((before.accuracy * 400 + later) / 460)
    assert after.high - after.low == pytest.approx((before.high - before.low) * 400 / 460)


def test_the_default_plan_and_estimate_are_the_lifelong_estimators_on_the_ranking_models(tmp_path):
    from lifelong.sortsearch.estimators.base import EstimationTask
    from lifelong.sortsearch.estimators.ours import Lifelong

    truth = planted()
    store = store_with(tmp_path, truth, ranking=25)
    sort_store(store)
    plan = plan_model(store, 40)
    assert plan.sampling == "lifelong"
    direct = Lifelong().plan(EstimationTask(truth[:25], 40))  # dense rows, the same sources
    assert sorted(plan.sample_ids.tolist()) == sorted(direct.items.tolist())
    order = store.load_sort(plan.sort_version)
    rank = np.empty(order.size, np.int64)
    rank[order] = np.arange(order.size)
    assert np.array_equal(plan.positions, np.sort(rank[plan.sample_ids]))
    model_id, estimate = add_model(store, "new", plan, truth[30, plan.sample_ids])
    expected = direct.estimate(truth[30, direct.items][None, :])
    acc = store.accuracies([model_id])[model_id]
    assert estimate == pytest.approx(expected.accuracy[0]) and acc.accuracy == pytest.approx(expected.accuracy[0])
    assert (acc.low, acc.high) == pytest.approx((expected.low[0], expected.high[0]))
    assert acc.low <= acc.accuracy <= acc.high and store.estimates()[model_id].method == "lifelong"
    assert store.check() == []


def test_the_estimators_plan_is_fitted_once_per_sort_and_budget_and_refitted_when_its_file_is_bad(
    tmp_path, monkeypatch
):
    from lifelong.sortsearch import plan_cache

    truth = planted()
    store = store_with(tmp_path, truth, ranking=25)
    sort_store(store)
    fits = []
    first = plan_model(store, 40)
    version = first.sort_version
    path = plan_cache.plan_path(store.path, version, 40)
    assert path.is_file()
    monkeypatch.setattr("lifelong.sortsearch.insert.Lifelong.plan", lambda *a: fits.append(1) or 1 / 0)
    again = plan_model(store, 40)  # read from the file: no fit
    assert fits == [] and np.array_equal(again.sample_ids, first.sample_ids)
    path.write_bytes(b"not a plan")
    with pytest.raises(ZeroDivisionError):  # a bad file is fitted again
        plan_model(store, 40)
    assert fits == [1]
    assert store.check() == []
