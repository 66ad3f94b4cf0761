"""`lifelong cog levels / compare / pretrain / run / install-art` from Python (lifelong.api): the objects the command
prints, nothing printed, progress through a callback, the CLI's error messages, the encoder loaded once per run, and
Ctrl-C then resume=True ending where an uninterrupted run ends, as the command line does."""

from __future__ import annotations

import csv
import dataclasses

import pytest
from _prereq import wordnet
from commands.test_cog_folders import IMAGES_PER_CONCEPT, write_concepts
from commands.test_cog_pretrain_concepts import _exported
from commands.test_encoder_option import FACTORY, count_loads
from typer.testing import CliRunner

from lifelong import api
from lifelong.cli import app
from lifelong.commands import cog_prepare, remote_runs
from lifelong.concepts.wnids import imagenet1k, imagenet21k
from lifelong.training.encoders import save_encoder, untrained_encoder

INTERRUPTED = "Every finished event is checkpointed: rerun the same command plus --resume."


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=80)


@pytest.fixture
def data(tmp_path):
    """Concept folders (2 seen concepts, levels 1 and 2 of 2 each), their levels file and validation folders, an
    encoder file: the spec of `cog run` on them (fast probe, 2 seeds) and the same as command-line arguments."""
    seen = imagenet1k()[:2]
    in1k = set(imagenet1k())
    unseen = [w for w in imagenet21k() if w not in in1k][:4]
    write_concepts(tmp_path / "images", seen + unseen)
    write_concepts(tmp_path / "val", seen, seed=1, count=5)
    levels = tmp_path / "levels.csv"
    with open(levels, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wnid", "name", "similarity", "level"])
        writer.writerows([[w, w, 0.5, 1 + i // 2] for i, w in enumerate(unseen)])
    encoder = save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "random.pt")
    spec = api.CogRunSpec(
        encoder=str(encoder),
        data=str(tmp_path / "images"),
        levels_file=levels,
        seen_val=tmp_path / "val",
        min_images=IMAGES_PER_CONCEPT,
        levels="seen,1",
        seeds=2,
        probe="fast",
        out=tmp_path / "runs",
        data_root=tmp_path / "data",
    )
    args = ["cog", "run", "--encoder", encoder, "--data", spec.data, "--levels-file", levels, "--seen-val"]
    args += [spec.seen_val, "--min-images", IMAGES_PER_CONCEPT, "--levels", "seen,1", "--seeds", 2, "--probe", "fast"]
    return spec, args + ["--data-root", spec.data_root]


def cells(result) -> dict[str, str]:
    """{level: 'mean ± std'} of the `all` column, as `cog run` prints it."""
    rows = result.table().to_dict("records")
    return {row["level"]: f"{row['top1']:.2f} ± {row['std']:.2f}" for row in rows if row["shots"] == "all"}


def test_cog_run_returns_the_table_the_command_prints_and_prints_nothing(data, tmp_path, capsys):
    spec, args = data
    calls = []
    result = api.cog_run(spec, progress=lambda *call: calls.append(call))
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err == ""
    assert isinstance(result, api.CogRunResult) and result.exit_code == 0
    assert set(result.top1) == {("seen", "all"), ("L1", "all")} and all(len(v) == 2 for v in result.top1.values())
    assert [f.parent for f in result.folders] == [tmp_path / "runs"] * 4 and result.styles == [None]
    assert set(result.intervals) == set(result.top1)
    descriptions = {description for description, _, _ in calls}
    assert {"features seen train", "features level 1 test"} <= descriptions  # each split's extraction
    finished = [(done, total) for description, done, total in calls if description.startswith("cog run ")]
    assert finished[-1] == (4, 4)  # every run, each told when it ends

    cli = invoke(*args, "--out", tmp_path / "cli")
    assert cli.exit_code == 0, cli.output
    for level, cell in cells(result).items():
        assert any(
            line.split("│")[1].strip() == level and cell in line for line in cli.output.splitlines() if "│" in line
        )


@pytest.mark.parametrize(
    ("changes", "flags", "message"),
    [
        ({"probe": "fsat"}, ["--probe", "fsat"], "unknown --probe 'fsat' (did you mean 'fast'?)"),
        ({"seed": 23}, ["--seed", 23], "--seed 23 is not a protocol seed; ImageNet-CoG's seeds are 22, 37, 45"),
        ({"seed": 77, "seeds": 3}, ["--seed", 77, "--seeds", 3], "give --seeds 2 or less, or an earlier --seed"),
        ({"shots": "all,0"}, ["--shots", "all,0"], "shots '0' is neither 'all' nor a positive integer"),
        ({"levels": "sen,1"}, ["--levels", "sen,1"], "unknown level 'sen' (did you mean 'seen'?)"),
        ({"test_style": "noto"}, ["--test-style", "noto"], "--test-style goes with --data cog-mini"),
    ],
)
def test_bad_values_raise_usage_errors_in_the_clis_words(data, tmp_path, changes, flags, message):
    spec, args = data
    with pytest.raises(api.UsageError) as raised:
        api.cog_run(dataclasses.replace(spec, **changes))
    assert message in str(raised.value)
    cli = invoke(*[a for a in args if a != "--levels" and a != "seen,1"], *flags, "--out", tmp_path / "cli")
    said = " ".join(cli.output.split())
    assert cli.exit_code == 2 and said.startswith("error: ") and message in said, cli.output
    assert not (tmp_path / "runs").exists() and not (tmp_path / "cli").exists()


def test_cog_run_loads_a_factory_encoder_once(data, tmp_path, monkeypatch):
    spec, _ = data
    (tmp_path / "cog_api_encoder.py").write_text(FACTORY)
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = count_loads(monkeypatch)
    result = api.cog_run(dataclasses.replace(spec, encoder="cog_api_encoder:make", levels="", seeds=1))
    assert calls == ["cog_api_encoder:make"]  # named the features set, then extracted 3 levels x 2 splits
    assert {level for level, _ in result.top1} == {"seen", "L1", "L2"}


def _stop_in_the_third_run(monkeypatch):
    """Ctrl-C in the third run, after its first event is checkpointed (as a user's Ctrl-C mid-run)."""
    original, started = remote_runs.execute, []

    def execute(run_spec, *args, **kwargs):
        started.append(run_spec.run_id)
        if len(started) == 3:
            original(dataclasses.replace(run_spec, stop_after=1))
            raise KeyboardInterrupt
        return original(run_spec, *args, **kwargs)

    monkeypatch.setattr(remote_runs, "execute", execute)
    return started


def test_interrupt_then_resume_ends_as_an_uninterrupted_run_from_python_and_from_the_cli(data, tmp_path, monkeypatch):
    spec, args = data
    whole = api.cog_run(dataclasses.replace(spec, out=tmp_path / "whole"))
    stop = _stop_in_the_third_run(monkeypatch)
    with pytest.raises(api.Interrupted) as stopped:
        api.cog_run(spec)
    assert stopped.value.kept == INTERRUPTED and len(stop) == 3
    with pytest.raises(api.ResumeRefused, match="--resume"):  # the runs are there: resume or overwrite
        api.cog_run(spec)
    resumed = api.cog_run(dataclasses.replace(spec, resume=True))
    assert len(stop) == 3 + 2  # the interrupted run continued, the last one ran; the first two were read back
    assert resumed.top1 == whole.top1 and resumed.intervals == whole.intervals

    stop.clear()
    cli = invoke(*args, "--out", tmp_path / "cli")
    assert cli.exit_code == 130 and f"Interrupted. {INTERRUPTED}" in " ".join(cli.output.split()), cli.output
    again = invoke(*args, "--out", tmp_path / "cli", "--resume")
    assert again.exit_code == 0, again.output
    for cell in cells(whole).values():
        assert cell in again.output


def test_pretrain_returns_the_summary_it_prints_keeps_a_finished_encoder_and_reports_epochs(
    tmp_path, monkeypatch, capsys
):
    random = api.cog_pretrain(api.CogPretrainSpec(kind="random", out=tmp_path / "random.pt", seed=1))
    assert random.summary["epochs"] == 0 and random.summary["seed"] == 1 and not random.kept
    kept = api.cog_pretrain(api.CogPretrainSpec(kind="random", out=tmp_path / "random.pt", resume=True))
    assert kept.kept and kept.summary["trained"] == "before"
    with pytest.raises(api.ResumeRefused, match="--resume"):
        api.cog_pretrain(api.CogPretrainSpec(kind="random", out=tmp_path / "random.pt"))
    cog = _exported(tmp_path / "folders")

    def folders(data_root, levels, test_style=None, progress=True):
        return cog, tmp_path / "folders"

    monkeypatch.setattr(cog_prepare, "_cog_mini_folders", folders)
    calls = []
    spec = api.CogPretrainSpec(kind="supervised", out=tmp_path / "sup.pt", epochs=2, resolution=16)
    trained = api.cog_pretrain(spec, progress=lambda *call: calls.append(call))
    assert trained.summary["kind"] == "supervised" and trained.encoder.is_file()
    assert [done for description, done, _ in calls if description.startswith("epoch")] == [1, 2]
    assert capsys.readouterr().out == ""
    with pytest.raises(api.UsageError, match=r"unknown --kind 'simclrr' \(did you mean 'simclr'\?\)"):
        api.CogPretrainSpec(kind="simclrr", out=tmp_path / "x.pt")
    cli = invoke("cog", "pretrain", "--kind", "simclrr", "--out", tmp_path / "x.pt")
    assert cli.exit_code == 2 and "error: unknown --kind 'simclrr' (did you mean 'simclr'?)" in cli.output


def test_levels_and_compare_return_what_the_command_prints(tmp_path, capsys):
    wordnet()
    seen = tmp_path / "seen.txt"
    seen.write_text("n02084071\n")  # dog
    few = tmp_path / "few.txt"
    few.write_text("n02121808\nn02123045\nn01503061\nn02691156\n")  # domestic cat, tabby, bird, airplane
    spec = api.CogLevelsSpec(seen=seen, candidates=few, levels=2, out=tmp_path / "levels.csv")
    built = api.cog_levels(spec)
    assert built.out.is_file() and len(built.levels.rows) == sum(b - a for a, b in built.levels.bounds)
    assert len(built.variants) == 6 and sum(v.chosen for v in built.variants) == 1
    with pytest.raises(api.ResumeRefused, match="--overwrite"):
        api.cog_levels(spec)
    compared = api.cog_compare(api.CogCompareSpec(seen=seen, candidates=few, file=built.out))
    assert compared.comparison.contiguous and [row["level"] for row in compared.comparison.levels] == [1, 2]
    assert capsys.readouterr().out == ""
    with pytest.raises(api.UsageError, match=r"unknown --similarity 'lni' \(did you mean 'lin'\?\)"):
        api.CogLevelsSpec(similarity="lni")
    cli = invoke("cog", "levels", "--out", tmp_path / "cli.csv", "--seen", seen, "--candidates", few, "--levels", 2)
    assert cli.exit_code == 0, cli.output
    assert (tmp_path / "cli.csv").read_text() == built.out.read_text()


def test_install_art_plans_runs_each_command_and_says_what_is_missing(tmp_path, capsys):
    spec = api.CogInstallArtSpec(dry_run=True, emoji_dir=tmp_path / "emoji")
    dry = api.cog_install_art(spec)
    assert (
        dry.exit_code == 0 and not dry.ran and [s.name.split(" ")[0] for s in dry.plan.steps][:2] == ["Debian", "npm"]
    )
    from lifelong.commands.cog_install import Step

    steps = [Step("ok", commands=(("true",), ("false",), ("true",))), Step("by hand", by_hand="do it")]
    plan = api.CogInstallArtPlan(tmp_path / "emoji", steps, under_sudo=False)
    calls = []
    done = api.cog_install_art(dataclasses.replace(spec, dry_run=False), plan=plan, progress=lambda *c: calls.append(c))
    assert [(r.command, r.code) for r in done.ran] == [(("true",), 0), (("false",), 1)]  # the step stops there
    assert done.not_done == ["by hand", "ok"] and done.exit_code == (1 if done.missing else 0)
    assert [c[0] for c in calls if c[0]] == ["true", "true", "false", "false"]  # before and after each command
    assert capsys.readouterr().out == "" and not (tmp_path / "emoji").exists()
