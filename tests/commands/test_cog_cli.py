"""`lifelong cog run` as a user types it: only the asked levels are extracted, existing runs need --resume or
--overwrite, the protocol seeds under --seed/--seeds, --skip-corrupt, errors in CLI words, tables in 80 columns."""

from __future__ import annotations

import csv
import json

import pytest
from commands.test_cog_folders import seen_val_args, write_concepts
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands import terminal
from lifelong.commands.cog_console import print_cog_table
from lifelong.commands.cog_run import protocol_seeds
from lifelong.concepts.wnids import imagenet1k, imagenet21k
from lifelong.training.encoders import save_encoder, untrained_encoder


@pytest.fixture
def setup(tmp_path):
    """Concept folders with three levels (seen, L1, L2), their levels file, an encoder; the args of `cog run`."""
    seen = imagenet1k()[:2]
    in1k = set(imagenet1k())
    unseen = [w for w in imagenet21k() if w not in in1k][:4]
    write_concepts(tmp_path / "images", seen + unseen)
    levels = tmp_path / "levels.csv"
    with open(levels, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["wnid", "name", "similarity", "level"])
        writer.writerows([[w, w, 0.5, 1 + i // 2] for i, w in enumerate(unseen)])
    encoder = save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "random.pt")
    args = ["cog", "run", "--encoder", str(encoder), "--data", str(tmp_path / "images"), "--levels-file", str(levels)]
    args += ["--probe", "fast"]
    args += seen_val_args(tmp_path, seen)
    return tmp_path, args + ["--out", str(tmp_path / "runs"), "--data-root", str(tmp_path / "data")]


def invoke(args):
    return CliRunner().invoke(app, args, terminal_width=80)


def features_set(root):
    (index,) = (root / "data" / "cog-features").glob("*/cog.json")
    return index.parent, [level["name"] for level in json.loads(index.read_text())["levels"]]


def test_only_the_asked_levels_are_extracted_each_bar_naming_level_and_split(setup):
    root, args = setup
    result = invoke(args + ["--levels", "seen,1", "--seeds", "1"])
    assert result.exit_code == 0, result.output
    folder, listed = features_set(root)
    assert listed == ["seen", "L1"]
    assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == ["L1", "seen"]  # L2 untouched
    for bar in ("features seen train", "features seen test", "features level 1 train", "features level 1 test"):
        assert bar in result.output
    assert "features level 2" not in result.output

    later = invoke(args + ["--levels", "2", "--seeds", "1"])  # another level later: added, in the set's order
    assert later.exit_code == 0, later.output
    assert features_set(root)[1] == ["seen", "L1", "L2"]
    assert "features seen" not in later.output and "features level 2 train" in later.output


def test_existing_runs_need_resume_or_overwrite(setup):
    root, args = setup
    args = args + ["--levels", "seen", "--seeds", "1"]
    assert invoke(args).exit_code == 0
    (run,) = [p for p in (root / "runs").iterdir() if p.is_dir()]
    again = invoke(args)
    assert again.exit_code == 2
    assert "--resume" in again.output and "--overwrite" in again.output and "Traceback" not in again.output
    resumed = invoke(args + ["--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert "±" in resumed.output and "features seen train" not in resumed.output  # finished features: reused
    marker = run / "marker.txt"
    marker.write_text("from the first run")
    redone = invoke(args + ["--overwrite"])
    assert redone.exit_code == 0, redone.output
    assert not marker.exists() and (run / "summary.json").is_file()
    assert "features seen train" in redone.output  # --overwrite starts the asked levels' features over too


def test_seed_and_seeds_pick_protocol_seeds(setup):
    assert protocol_seeds(None, None) == [22, 37, 45, 77, 93]
    assert protocol_seeds(None, 2) == [22, 37]
    assert protocol_seeds(45, None) == [45]
    assert protocol_seeds(45, 2) == [45, 77]
    root, args = setup
    result = invoke(args + ["--levels", "seen", "--seed", "45", "--seeds", "2"])
    assert result.exit_code == 0, result.output
    runs = sorted(p.name for p in (root / "runs").iterdir() if p.is_dir())
    assert len(runs) == 2 and any("seed45" in r for r in runs) and any("seed77" in r for r in runs)
    # the interval over the seen level's concepts, from both seeds' saved predictions
    line = next(x for x in result.output.splitlines() if x.startswith("95% interval over concepts"))
    low, high = (float(v) for v in line.split("seen [")[1].split("]")[0].split(","))
    assert 0.0 <= low <= high <= 100.0
    wrong = invoke(args + ["--seed", "23"])
    assert wrong.exit_code == 2 and "--seed 23 is not a protocol seed" in wrong.output
    assert "22, 37, 45, 77, 93" in wrong.output
    too_many = invoke(args + ["--seed", "77", "--seeds", "3"])
    assert too_many.exit_code == 2 and "--seeds 2 or less" in too_many.output
    help_text = invoke(["cog", "run", "--help"]).output
    assert "--seeds" in help_text and "--seed" in help_text and "--skip-corrupt" in help_text


def test_unknown_names_get_did_you_mean_in_cli_words(setup):
    root, args = setup
    level = invoke(args + ["--levels", "sen,1"])
    assert level.exit_code == 2 and "unknown level 'sen' (did you mean 'seen'?)" in level.output
    assert "choose among seen, 1, 2" in level.output
    probe = invoke(args + ["--probe", "fsat"])
    assert probe.exit_code == 2 and "(did you mean 'fast'?)" in probe.output
    kind = invoke(["cog", "pretrain", "--kind", "simclrr", "--out", str(root / "e.pt")])
    assert kind.exit_code == 2 and "(did you mean 'simclr'?)" in kind.output
    arch = invoke(["cog", "pretrain", "--kind", "random", "--architecture", "resnet19", "--out", str(root / "e.pt")])
    assert arch.exit_code == 2 and "--architecture" in arch.output and "did you mean 'resnet18'" in arch.output
    for result in (level, probe, kind, arch):
        assert "Error" not in result.output and "Traceback" not in result.output
    assert not (root / "runs").exists() and not (root / "data" / "cog-features").exists()


def test_corrupt_image_is_an_error_naming_skip_corrupt_and_skipped_with_it(setup):
    root, args = setup
    folder = next(p for p in sorted((root / "images").iterdir()) if p.name in set(imagenet1k()))
    broken = folder / f"{folder.name}_0.png"
    broken.write_bytes(b"not a png at all")
    args = args + ["--levels", "seen", "--seeds", "1"]
    refused = invoke(args)
    assert refused.exit_code == 2
    assert broken.name in refused.output and "--skip-corrupt" in refused.output
    assert "skip_corrupt" not in refused.output and not (root / "runs").exists()
    skipped = invoke(args + ["--skip-corrupt"])
    assert skipped.exit_code == 0, skipped.output
    assert "1 unreadable image(s) left out" in skipped.output


def test_pretrain_keeps_an_existing_encoder_unless_told(tmp_path):
    out = tmp_path / "enc.pt"
    args = ["cog", "pretrain", "--kind", "random", "--out", str(out)]
    assert invoke(args).exit_code == 0
    before = out.read_bytes()
    again = invoke(args + ["--seed", "1"])
    assert again.exit_code == 2 and "--resume" in again.output and "--overwrite" in again.output
    assert out.read_bytes() == before
    kept = invoke(args + ["--seed", "1", "--resume"])
    assert kept.exit_code == 0 and out.read_bytes() == before
    redone = invoke(args + ["--seed", "1", "--overwrite"])
    assert redone.exit_code == 0 and out.read_bytes() != before


def _result(level: str, shots: str, errors: list[float]) -> dict:
    task = f"cog-{level}-{'all' if shots == 'all' else shots + 'shot'}"
    return {"records": [{"type": "predict", "task": task, "error": e} for e in errors]}


def test_cog_table_fits_80_columns_with_every_level_and_shot(monkeypatch, capsys):
    monkeypatch.setattr(terminal.console, "width", 80)
    levels = ["seen", "L1", "L2", "L3", "L4", "L5"]
    shots = ["all", "1", "2", "4", "8", "16", "32"]
    results = [_result(lv, s, [0.1 + 0.01 * i, 0.15, 0.2]) for i, lv in enumerate(levels) for s in shots]
    print_cog_table(results, title="ImageNet-CoG top-1 (%), fast probe", features="cog-mini-random-0123456789")
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    for header in ("all", "1-shot", "32-shot"):
        assert header in out
    assert out.count("±") >= len(levels) * len(shots)
    assert "mean ± std over 3 seeds" in out and "None" not in out
    assert sum(line.lstrip("│ ").startswith("L5") for line in lines) >= 2  # split into tables, each with every level


def test_held_out_styles_get_a_table_each_before_the_pooled_one(monkeypatch, capsys):
    from lifelong.commands.cog_console import print_fold_tables

    monkeypatch.setattr(terminal.console, "width", 120)
    easy = [_result(lv, "all", [0.1, 0.1]) for lv in ("seen", "L1")]
    hard = [_result(lv, "all", [0.7, 0.7]) for lv in ("seen", "L1")]
    print_fold_tables(easy + hard, [2, 2], ["noto", "openmoji"], ["set-noto", "set-openmoji"], title="CoG")
    out = capsys.readouterr().out
    assert out.index("CoG, noto held out") < out.index("CoG, openmoji held out") < out.index("CoG: mean")
    assert "90.00 ± 0.00" in out and "30.00 ± 0.00" in out  # each style alone: no spread
    assert "60.00 ± 30.00" in out and "mixes the styles' difficulty" in out  # pooled: the styles' difference
    print_fold_tables(easy, [2], [None], ["set"], title="CoG")
    assert "held out" not in capsys.readouterr().out


def test_levels_checks_names_and_keeps_an_existing_out(tmp_path):
    out = tmp_path / "levels.csv"
    typo = invoke(["cog", "levels", "--out", str(out), "--similarity", "lni"])
    assert typo.exit_code == 2 and "unknown --similarity 'lni' (did you mean 'lin'?)" in typo.output
    order = invoke(["cog", "levels", "--out", str(out), "--order", "seen,persn"])
    assert order.exit_code == 2 and "(did you mean 'person'?)" in order.output and "['" not in order.output
    out.write_text("kept")
    exists = invoke(["cog", "levels", "--out", str(out)])
    assert exists.exit_code == 2 and "--overwrite" in exists.output and out.read_text() == "kept"


def test_cog_mini_without_its_artwork_names_the_install_command(tmp_path, monkeypatch):
    from lifelong.data.sources.emoji_art import EmojiArt

    monkeypatch.delenv("LIFELONG_EMOJI_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    if EmojiArt().available("twemoji"):
        pytest.skip("emoji-datasource-twitter is installed globally (npm -g)")
    encoder = save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "random.pt")
    args = ["cog", "run", "--encoder", str(encoder), "--data-root", str(tmp_path / "data"), "--out", "runs"]
    result = invoke(args)
    assert result.exit_code == 2 and "`lifelong cog install-art`" in result.output
    assert "emoji-datasource-twitter" in result.output and not (tmp_path / "runs").exists()


def test_held_out_style_folds_and_their_encoders(tmp_path):
    from lifelong.commands.cog_run import held_out_style_folds

    assert held_out_style_folds("efficientnet-lite0", "cog-mini", None) == [(None, "efficientnet-lite0")]
    folds = held_out_style_folds("enc/sup-{style}.pt", "cog-mini", "all")
    assert folds == [(s, f"enc/sup-{s}.pt") for s in ("noto", "twemoji", "openmoji")]
    assert held_out_style_folds("efficientnet-lite0", "cog-mini", "noto") == [("noto", "efficientnet-lite0")]
    for bad, message in (
        (("enc/sup-{style}.pt", "cog-mini", None), "give --test-style all"),
        (("efficientnet-lite0", "cog-mini", "twemojj"), "did you mean 'twemoji'"),
        (("efficientnet-lite0", str(tmp_path), "noto"), "goes with --data cog-mini"),
        (("efficientnet-lite0", "cog-mini", "symbola"), "does not draw every cog-mini concept"),
    ):
        with pytest.raises(ValueError, match=message):
            held_out_style_folds(*bad)
    wrong = invoke(["cog", "pretrain", "--kind", "random", "--test-style", "notto", "--out", str(tmp_path / "e.pt")])
    assert wrong.exit_code != 0 and "did you mean 'noto'" in wrong.output
