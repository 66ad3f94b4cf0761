"""Run ids: readable, one per setup, the same for the same setup however its options were typed."""

from lifelong.results.ids import group_id, run_id


def test_plain_runs_keep_their_documented_ids():
    assert run_id("mini", "independent", 0) == "mini-independent-seed0"
    assert run_id("clear-mini", "finetune", 2, stream_options={"protocol": "iid"}) == "clear-mini-iid-finetune-seed2"
    assert run_id("my-stream.yaml", "er", 1, eval_split="test") == "my-stream-er-seed1-final"


def test_options_get_a_stable_hash_that_ignores_their_order_and_spelling():
    one = run_id("mini", "independent", 0, learner_options={"epochs": 1, "lr": 0.01})
    assert one == run_id("mini", "independent", 0, learner_options={"lr": 0.01, "epochs": 1.0})
    assert one != run_id("mini", "independent", 0, learner_options={"epochs": 2, "lr": 0.01})
    assert one != run_id("mini", "independent", 0, stream_options={"epochs": 1, "lr": 0.01})
    assert one.startswith("mini-independent-") and one.endswith("-seed0") and len(one) == len("mini-independent-") + 14


def test_the_seed_is_not_hashed_so_seeds_of_one_setup_form_one_group():
    options = {"learner_options": {"probe": "fast"}, "stream_options": {"levels": "L1", "shots": "8", "features": "x"}}
    ids = [run_id("cog-mini", "linear-probe", seed, eval_split="test", **options) for seed in (22, 23)]
    assert ids[0].startswith("cog-mini-L1-8shot-linear-probe-") and ids[0].endswith("-seed22-final")
    assert group_id(ids[0]) == group_id(ids[1]) and "seed" not in group_id(ids[0])
    assert group_id("mini-independent-seed0") == "mini-independent"
