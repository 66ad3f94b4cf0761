"""`--preset quick|full` (and the facts stream's `-s preset=`): each preset resolves to the sizes the docs state
(the docs hold the tables `preset_table` makes, verbatim), options given explicitly win, the preset is recorded
with the other settings and `--resume` refuses another one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app
from lifelong.commands.presets import PRESETS, SIZES, preset_table
from lifelong.core.errors import ResumeRefused, UsageError

DOCS = Path(__file__).resolve().parents[2] / "docs"
README = DOCS.parent / "README.md"
runner = CliRunner()


def test_every_command_and_the_facts_stream_name_the_same_presets():
    from lifelong.data.sources.facts_mini import FactsMiniOptions
    from lifelong.suites.facts import PRESET_SIZES

    assert PRESETS == ("quick", "full")
    for sizes in (*SIZES.values(), PRESET_SIZES):
        assert set(sizes) == set(PRESETS) and set(sizes["quick"]) == set(sizes["full"])
    defaults = FactsMiniOptions()
    assert {name: getattr(defaults, name) for name in PRESET_SIZES["full"]} == PRESET_SIZES["full"]


def test_the_specs_resolve_each_preset_to_its_sizes_and_no_preset_to_full():
    for preset in (None, *PRESETS):
        sizes = SIZES["bench build-zoo"][preset or "full"]
        zoo = api.BenchBuildZooSpec("zoo", preset=preset)
        assert (zoo.models, zoo.test_samples, zoo.preset) == (sizes["models"], sizes["test_samples"], preset or "full")
        sizes = SIZES["bench compare"][preset or "full"]
        compare = api.BenchCompareSpec(zoo="zoo", out="cmp", preset=preset)
        assert (compare.seeds, compare.budgets) == (sizes["seeds"], sizes["budgets"])
        assert (
            api.CogPretrainSpec("supervised", "enc.pt", preset=preset).epochs
            == SIZES["cog pretrain"][preset or "full"]["epochs"]
        )
        run = api.CogRunSpec("enc.pt", preset=preset)
        sizes = SIZES["cog run"][preset or "full"]
        assert (run.seeds, run.probe, run.seen_draws) == (sizes["seeds"], sizes["probe"], sizes["seen_draws"])


def test_the_full_preset_is_what_the_commands_did_before_presets():
    assert SIZES["bench build-zoo"]["full"] == {"models": 120, "test_samples": 2000}
    assert SIZES["bench compare"]["full"] == {"seeds": 10, "budgets": "10,30,100,1000"}
    assert SIZES["cog pretrain"]["full"] == {"epochs": 30}
    assert SIZES["cog run"]["full"] == {"seeds": 5, "probe": "reference", "seen_draws": 5}
    assert api.CogRunSpec("enc.pt").protocol_seeds == [22, 37, 45, 77, 93]


def test_options_given_explicitly_win_over_the_preset():
    zoo = api.BenchBuildZooSpec("zoo", models=7, preset="quick")
    assert (zoo.models, zoo.test_samples) == (7, SIZES["bench build-zoo"]["quick"]["test_samples"])
    compare = api.BenchCompareSpec(zoo="zoo", out="cmp", budgets="10", preset="quick")
    assert (compare.seeds, compare.budgets) == (SIZES["bench compare"]["quick"]["seeds"], "10")
    assert api.CogPretrainSpec("simclr", "enc.pt", epochs=12, preset="quick").epochs == 12
    run = api.CogRunSpec("enc.pt", probe="reference", seen_draws=0, preset="quick")
    assert (run.probe, run.seen_draws, run.seeds) == ("reference", 0, 1)
    assert api.CogRunSpec("enc.pt", seed=37, preset="full").protocol_seeds == [37]  # --seed alone: that run only


def test_an_unknown_preset_is_a_usage_error_with_a_suggestion():
    with pytest.raises(UsageError, match="unknown --preset 'quik'.*did you mean 'quick'"):
        api.BenchBuildZooSpec("zoo", preset="quik")
    for args in (
        ["cog", "pretrain", "--kind", "random", "--out", "enc.pt"],
        ["cog", "run", "--encoder", "enc.pt"],
        ["bench", "build-zoo", "zoo"],
        ["bench", "compare", "--zoo", "zoo", "--out", "cmp"],
    ):  # each command hands --preset to its spec, which checks it before any work
        result = runner.invoke(app, [*args, "--preset", "fast"])
        assert result.exit_code == 2 and "unknown --preset 'fast'" in result.output, (args, result.output)
        assert "quick or full" in " ".join(result.output.split())


def test_the_facts_stream_preset_sets_sizes_that_explicit_options_override():
    from lifelong.suites import check_stream_options
    from lifelong.suites.facts import PRESET_SIZES, preset_options

    assert preset_options("quick", {}) == PRESET_SIZES["quick"]
    assert preset_options(None, {"n_images": "9000"}) == PRESET_SIZES["full"] | {"n_images": "9000"}
    assert preset_options("quick", {"test_per_fact": "4"})["test_per_fact"] == "4"
    with pytest.raises(ValueError, match="-s preset=small: unknown preset; give full or quick"):
        preset_options("small", {})
    check_stream_options("facts-mini", {"preset": "quick"})


def test_the_facts_stream_is_built_at_the_preset_size_without_rendering_an_image():
    from lifelong.suites.facts import facts_mini

    quick = facts_mini(preset="quick").metadata["fact_train_images"]
    assert len(quick) == 186 and sum(quick) == 12_000 - 16 * 186
    assert sum(facts_mini().metadata["fact_train_images"]) == 28_624 - 16 * 186
    assert sum(facts_mini(preset="quick", n_images="10000").metadata["fact_train_images"]) == 10_000 - 16 * 186


@pytest.mark.parametrize(
    ("doc", "commands"),
    [
        ("sort-and-search.md", ["bench build-zoo", "bench compare"]),
        ("cog.md", ["cog pretrain", "cog run"]),
        ("cli.md", ["bench build-zoo", "bench compare", "cog pretrain", "cog run"]),
    ],
)
def test_the_docs_state_the_sizes_the_code_resolves(doc, commands):
    text = (DOCS / doc).read_text()
    for command in commands:
        assert preset_table(command) in text, (
            f"{doc} lacks (or misstates) the presets of {command}:\n{preset_table(command)}"
        )


@pytest.mark.parametrize("doc", ["facts.md", "cli.md"])
def test_the_docs_state_the_facts_stream_sizes_the_code_resolves(doc):
    from lifelong.suites.facts import PRESET_SIZES

    text = " ".join((DOCS / doc).read_text().split())
    for preset, sizes in PRESET_SIZES.items():
        stated = " ".join(f"-s {name}={value}" for name, value in sizes.items())
        assert f"`-s preset={preset}`: `{stated}`" in text, f"{doc} lacks `-s preset={preset}`: `{stated}`"


def test_the_readme_gives_each_quick_preset_as_a_command():
    lines = [line.strip() for line in README.read_text().splitlines()]
    for command in ("bench build-zoo", "bench compare", "cog pretrain", "cog run"):
        assert any(line.startswith(f"lifelong {command} ") and "--preset quick" in line for line in lines), command
    assert any(line.startswith("lifelong run --stream facts-mini") and "-s preset=quick" in line for line in lines)


def _matrix(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    theta, b = rng.normal(0, 1, 24), rng.normal(0, 1.5, 300)
    path = tmp_path / "m.npy"
    np.save(path, (rng.random((24, 300)) < 1 / (1 + np.exp(-(theta[:, None] - b[None, :])))).astype(np.uint8))
    return path


def test_compare_records_its_preset_and_resume_refuses_another(tmp_path):
    args = ["bench", "compare", "--matrix", str(_matrix(tmp_path)), "--splits", "interpolation"]
    args += ["--methods", "random-mean", "--out", str(tmp_path / "cmp"), "--preset", "quick"]
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    settings = json.loads((tmp_path / "cmp" / "settings.json").read_text())
    assert settings["preset"] == "quick" and settings["seeds"] == 3 and settings["budgets"] == [10, 30, 100]
    records = (tmp_path / "cmp" / "records.jsonl").read_text().splitlines()
    assert len(records) == 3 * 3  # seeds x budgets of the quick preset
    refused = runner.invoke(app, args[:-2] + ["--resume"])
    text = " ".join(refused.output.split())
    assert refused.exit_code == 2 and "made with --preset quick, not full: add --preset quick to resume it" in text
    assert runner.invoke(app, [*args, "--resume"]).exit_code == 0


def test_a_zoo_records_its_preset_and_resume_refuses_another(tmp_path):
    from lifelong.commands.bench_experiments import recorded_preset
    from lifelong.sortsearch.zoo import build_zoo
    from lifelong.sortsearch.zoo_models import ZooSpace

    tiny = ZooSpace(widths={"mlp": (16,), "cnn": (4,), "resnet_mini": (2,)}, train_sizes=(48,), max_epochs=1)
    out = tmp_path / "zoo"
    build_zoo(
        out,
        n_models=2,
        n_test=30,
        corruptions=(),
        source="builtin:letters",
        source_options={"n_per_class": 8},
        space=tiny,
        preset="quick",
        progress=False,
    )
    assert json.loads((out / "zoo.json").read_text())["settings"]["preset"] == "quick"
    assert json.loads((out / "models" / "settings.json").read_text())["preset"] == "quick"
    assert recorded_preset(out) == "quick"
    (out / "zoo.json").unlink()  # as an interrupted build leaves it: the models' record decides
    assert recorded_preset(out) == "quick"
    with pytest.raises(ResumeRefused, match=r"made with --preset quick, not full: add --preset quick"):
        api.bench_build_zoo(api.BenchBuildZooSpec(out, resume=True, source="builtin:letters"))


def test_a_finished_encoder_of_another_preset_is_refused_on_resume_not_kept(tmp_path):
    from lifelong.training.checkpoints import write_torch_file

    out = tmp_path / "enc.pt"
    write_torch_file({"epochs": SIZES["cog pretrain"]["quick"]["epochs"]}, out)
    spec = api.CogPretrainSpec("supervised", out, resume=True)
    with pytest.raises(ResumeRefused, match=r"trained for 4 epochs \(--preset quick\); this command asks for 30"):
        api.cog_pretrain(spec)
    work = tmp_path / "sup.pt.work"
    work.mkdir()
    (work / "settings.json").write_text(json.dumps({"epochs": 30}))
    with pytest.raises(
        ResumeRefused, match=r"trained for 30 epochs \(--preset full\); .* asks for 4 \(--preset quick\)"
    ):
        api.cog_pretrain(api.CogPretrainSpec("supervised", tmp_path / "sup.pt", resume=True, preset="quick"))
