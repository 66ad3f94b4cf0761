"""One name per idea: the encoder is `encoder` (the fact learners' former `backbone` still works, with a note, for
the same run id and numbers), and `lifelong cog run` loads `--encoder` once for naming its features set and
extracting every level's train and test features."""

from __future__ import annotations

import sys
import warnings

import pytest
from _prereq import emoji_art
from commands.test_cog_encoder_specs import _data
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.commands.runner import RunSpec, execute
from lifelong.learners import learner_options, make_learner, options
from lifelong.learners.fact_embedding import FactLearner
from lifelong.learners.options import RenamedOptionWarning
from lifelong.results.ids import run_id
from lifelong.training import encoders
from lifelong.training.encoders import save_encoder, untrained_encoder

FACTORY = (
    "import torch\nfrom torch import nn\n"
    "def make():\n    torch.manual_seed(0)\n"
    "    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())\n"
)


def count_loads(monkeypatch) -> list[str]:
    """Every `load_encoder` call from here on, by spec: the function is wrapped wherever a module bound it."""
    original, calls = encoders.load_encoder, []

    def counted(spec, *args, **kwargs):
        calls.append(str(spec))
        return original(spec, *args, **kwargs)

    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "__name__", "").startswith("lifelong"):
            if getattr(module, "load_encoder", None) is original:
                monkeypatch.setattr(module, "load_encoder", counted)
    return calls


@pytest.mark.parametrize("kind", ["file", "factory"])
def test_cog_run_loads_the_encoder_once(tmp_path, monkeypatch, kind):
    images, levels, val = _data(tmp_path)
    if kind == "file":  # named by its bytes; loaded for extraction only
        spec = str(save_encoder(untrained_encoder("resnet_mini", resolution=16), tmp_path / "random.pt"))
    else:  # a package.module:factory is loaded to name the set: the same Encoder then extracts
        (tmp_path / "encoder_option_mod.py").write_text(FACTORY)
        monkeypatch.syspath_prepend(str(tmp_path))
        spec = "encoder_option_mod:make"
    import lifelong.commands.cog_prepare  # noqa: F401  (bound before counting)
    import lifelong.training.features  # noqa: F401

    calls = count_loads(monkeypatch)
    args = ["cog", "run", "--encoder", spec, "--data", str(images), "--levels-file", str(levels), "--probe", "fast"]
    args += ["--seeds", "1", "--out", str(tmp_path / "runs"), "--data-root", str(tmp_path / "data"), *val]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "L1" in result.output  # two levels (seen, L1), each a train and a test split, were extracted
    assert calls == [spec]


# ---- the fact learners' trunk is `encoder`; `backbone`, its former name, still works --------------------------------

SMALL_FACTS = {"size": 16, "n_sp": 8, "n_spo": 12, "n_images": 388, "min_per_fact": 2, "max_per_fact": 40}
SMALL_FACTS.update(test_per_fact=2, split="random", tasks=3)
CNN = {"encoder": "none", "epochs": 1, "batch_size": 32, "resolution": 16, "converge": False}


@pytest.fixture(autouse=True)
def fresh_notes(monkeypatch):
    """Each test sees the renamed-option notes as a new process would (each is given once per process)."""
    monkeypatch.setattr(options, "_NOTED", set())


def test_the_former_name_gives_the_same_config_with_one_note():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = FactLearner(backbone="none", epochs=1)
        FactLearner(backbone="none", epochs=2)  # another learner, the same note: not given again
    notes = [w for w in caught if issubclass(w.category, RenamedOptionWarning)]
    assert [str(w.message) for w in notes] == ["-o backbone is now -o encoder (the former name still works)"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RenamedOptionWarning)  # the new name: no note
        new = FactLearner(encoder="none", epochs=1)
    assert old.config == new.config and new.config.encoder is None
    with pytest.raises(ValueError, match="give -o encoder only"):
        make_learner("fact-expertgate", backbone="none", encoder="none")


def test_learners_listing_shows_encoder_and_its_former_name():
    rows = {row["name"]: row for row in learner_options("fact-finetune")}
    assert "backbone" not in rows and rows["encoder"]["default"] == "efficientnet-lite0"
    assert "backbone" in rows["encoder"]["help"] and "former name" in rows["encoder"]["help"]
    gate = {row["name"] for row in learner_options("fact-expertgate")}
    assert {"encoder", "gate_encoder"} <= gate  # the gates' own encoder is a second, different one


def test_either_name_is_one_run_id_the_id_of_runs_made_before_the_rename(tmp_path):
    def spec(options):
        return RunSpec(stream="facts-mini", learner="fact-finetune", out=str(tmp_path), learner_options=options)

    before = run_id("facts-mini", "fact-finetune", 0, learner_options={"backbone": "none", "epochs": 1})
    assert spec({"encoder": "none", "epochs": 1}).run_id == spec({"backbone": "none", "epochs": 1}).run_id == before
    assert spec({"encoder": "none"}).run_id != spec({"encoder": "efficientnet-lite0"}).run_id
    clear = RunSpec(stream="clear10", learner="ewc", learner_options={"encoder": "features"})  # no former names
    assert clear.run_id == run_id("clear10", "ewc", 0, learner_options={"encoder": "features"})


def test_a_run_started_under_the_former_name_resumes_under_the_new_one_to_the_same_numbers(tmp_path):
    emoji_art()
    common = dict(stream="facts-mini", learner="fact-finetune", data_root=str(tmp_path / "data"))
    common.update(stream_options=SMALL_FACTS)
    whole = execute(RunSpec(out=str(tmp_path / "whole"), learner_options=CNN, **common))
    old = {("backbone" if k == "encoder" else k): v for k, v in CNN.items()}
    with pytest.warns(RenamedOptionWarning):
        started = execute(RunSpec(out=str(tmp_path / "runs"), learner_options=old, stop_after=2, **common))
    resumed = execute(RunSpec(out=str(tmp_path / "runs"), learner_options=CNN, resume=True, **common))
    assert started["run_id"] == resumed["run_id"] == whole["run_id"]
    errors = [(r["task"], r.get("error")) for r in resumed["records"] if r["type"] == "predict"]
    assert errors == [(r["task"], r.get("error")) for r in whole["records"] if r["type"] == "predict"]
