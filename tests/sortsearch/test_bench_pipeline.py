"""Issue 22: the Sort & Search pipeline as a user types it (build-zoo -> import -> sort -> plan-model -> add-model
-> status), a missing data source, the README's budgets, --resume / --overwrite, and errors in CLI words."""

import csv
import functools
import json

import numpy as np
import pytest
from typer.testing import CliRunner

import lifelong.sortsearch.zoo as zoo
from lifelong.cli import app
from lifelong.commands.bench_inputs import parse_budgets
from lifelong.sortsearch.samples_csv import COLUMNS
from lifelong.sortsearch.zoo_models import ZooSpace

# every architecture at its smallest, one epoch on 48 images: a model trains in well under a second
TINY = ZooSpace(widths={"mlp": (16,), "cnn": (4,), "resnet_mini": (2,)}, train_sizes=(48,), max_epochs=1)
ZOO = ("--models", "5", "--source", "builtin:letters", "--test-samples", "40", "--corruptions", "noise")
ZOO += ("--severities", "1")
PYTHON_NAMES = ("BenchStore", "save_sort", "model_by_name", "allow_pickle", "pickle", "()", "Error(", "[", "{")


def lifelong(*args):
    """`lifelong ARGS` as typed at an 80-column terminal."""
    return CliRunner().invoke(app, [str(a) for a in args], terminal_width=80, catch_exceptions=False)


def words(text: str) -> str:
    """`text` with every run of white space (a line wrapped at 80 columns) as one space."""
    return " ".join(text.split())


def error_of(result) -> str:
    """The one `error:` line of a refused command (exit 2), checked to be in CLI words."""
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert not [word for word in PYTHON_NAMES if word in lines[0]], lines[0]
    return lines[0]


@pytest.fixture
def tiny_zoos(monkeypatch, tmp_path):
    """Zoos of the tiny space (the CLI's settings otherwise), built in tmp_path as the working folder."""
    monkeypatch.setattr(zoo, "ZooSettings", functools.partial(zoo.ZooSettings, space=TINY))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_readme_pipeline_runs_as_typed(tiny_zoos):
    built = lifelong("bench", "build-zoo", "zoo/", *ZOO)
    assert built.exit_code == 0, built.output
    assert "zoo: 5 models x 80 samples of builtin:letters (5 trained, 0 reused" in built.stdout
    with open("zoo/samples.csv", newline="") as handle:
        assert tuple(next(csv.reader(handle))) == COLUMNS  # the header the import reads
    imported = lifelong(
        "bench", "import", "store/", "--matrix", "zoo/correctness.npy", "--samples", "zoo/samples.csv",
        "--models", "zoo/models.csv",
    )  # fmt: skip
    assert imported.exit_code == 0, imported.output
    assert imported.stdout.strip() == "store: 5 models x 80 samples, all observed"
    sorted_ = lifelong("bench", "sort", "store/")
    assert (
        sorted_.exit_code == 0
        and sorted_.stdout.strip() == "sort version 1: 80 samples ranked by 5 fully observed models"
    )
    planned = lifelong("bench", "plan-model", "store/", "--budget", "16")
    ids = [int(line) for line in planned.stdout.split()]
    assert planned.exit_code == 0 and len(ids) == 16 and len(set(ids)) == 16 and all(0 <= i < 80 for i in ids)
    truth = np.load("zoo/correctness.npy")
    with open("results.csv", "w", newline="") as handle:  # a new model: the outcomes of zoo model 0, on the plan
        handle.write("sample_id,correct\n" + "".join(f"{i},{truth[0, i]}\n" for i in ids))
    np.save("outcomes.npy", truth[1, ids])
    added = lifelong("bench", "add-model", "store/", "--name", "mine", "--results", "results.csv")
    assert added.exit_code == 0, added.output
    assert added.stdout.startswith("added model mine (id 5), 16 of 80 samples observed")
    added = lifelong("bench", "add-model", "store/", "--name", "mine-npy", "--results", "outcomes.npy", "--budget", 16)
    assert added.exit_code == 0, added.output
    status = lifelong("bench", "status", "store/")
    assert status.exit_code == 0 and "7 models x 80 samples" in status.stdout
    assert max(len(line) for line in status.stdout.splitlines()) <= 80
    board = {
        row["name"]: row for row in json.loads(lifelong("bench", "status", "store/", "--json").stdout)["leaderboard"]
    }
    assert (len(board), board["mine"]["kind"], board["mine-npy"]["kind"]) == (7, "estimated", "estimated")
    observed = {row["name"]: row["accuracy"] for row in board.values() if row["kind"] == "observed"}
    with open("zoo/models.csv", newline="") as handle:
        names = [row["name"] for row in csv.DictReader(handle)]
    assert observed == {name: pytest.approx(truth[i].mean()) for i, name in enumerate(names)}
    assert lifelong("bench", "check", "store/").exit_code == 0
    beyond = lifelong(
        "bench", "beyond", "--matrix", "zoo/correctness.npy", "--samples", "zoo/samples.csv", "--budgets", "8,16",
        "--json",
    )  # fmt: skip
    assert beyond.exit_code == 0, beyond.output
    assert json.loads(beyond.stdout)["shape"] == [5, 80]


def test_a_samples_csv_of_an_older_build_zoo_still_imports(tmp_path):
    np.save(tmp_path / "m.npy", np.eye(3, 4, dtype=np.uint8))
    (tmp_path / "samples.csv").write_text(
        "id,source,source_item,domain,label,hash\n" + "".join(f"{j},s,{j},clean,1,h{j}\n" for j in range(4))
    )
    result = lifelong(
        "bench", "import", tmp_path / "store", "--matrix", tmp_path / "m.npy", "--samples", tmp_path / "samples.csv"
    )
    assert result.exit_code == 0, result.output
    (tmp_path / "shuffled.csv").write_text(
        "id,source,domain,label,content_hash\n" + "".join(f"{j},s,clean,1,h{j}\n" for j in (1, 0, 2, 3))
    )
    args = ("--matrix", tmp_path / "m.npy", "--samples", tmp_path / "shuffled.csv")
    assert "line 2: id is '1' but this row is matrix column 0" in error_of(
        lifelong("bench", "import", tmp_path / "s2", *args)
    )


def test_a_missing_source_is_an_error_naming_the_package_and_a_fallback_runs_only_when_asked(tiny_zoos, monkeypatch):
    monkeypatch.setattr("lifelong.data.sources.idx.FASHION_MNIST_DIRS", (tiny_zoos / "no-datasets",))
    small = ("--models", "1", "--test-samples", "20", "--corruptions", "")
    message = error_of(lifelong("bench", "build-zoo", "zoo", *small))  # the documented default source
    assert "apt-get install dataset-fashion-mnist" in message and "--fallback-source builtin:letters" in message
    assert not (tiny_zoos / "zoo").exists() or not any((tiny_zoos / "zoo").iterdir())
    message = error_of(lifelong("bench", "build-zoo", "zoo", "--source", "fashion-mnist", *small))  # asked for
    assert "apt-get install dataset-fashion-mnist" in message
    result = lifelong("bench", "build-zoo", "zoo", "--fallback-source", "builtin:letters", *small)
    assert result.exit_code == 0, result.output
    assert "note: fashion-mnist not found" in result.stderr and "builtin:letters" in result.stderr
    summary = json.loads((tiny_zoos / "zoo" / "zoo.json").read_text())
    assert summary["source"] == summary["settings"]["source"] == "builtin:letters"  # what ran
    assert summary["settings"]["requested_source"] == "fashion-mnist"
    with open(tiny_zoos / "zoo" / "samples.csv", newline="") as handle:
        assert {row["source"] for row in csv.DictReader(handle)} == {"builtin:letters"}
    help_text = lifelong("bench", "build-zoo", "--help").stdout
    assert "--fallback-source" in help_text and "--resume" in help_text and "--overwrite" in help_text


def test_budgets_take_the_readmes_geometric_run(tmp_path):
    assert parse_budgets("8,16,...,16384") == [8 * 2**i for i in range(12)]
    assert parse_budgets("8, 32, 300") == [8, 32, 300]
    assert parse_budgets("10,30,...,270") == [10, 30, 90, 270]
    for bad in ("8,16,...,100", "8,12,...,64", "8,...,64", "8,16,...", "8,x", "8,16,...,64,...,128"):
        with pytest.raises(ValueError, match="budgets"):
            parse_budgets(bad)
    rng = np.random.default_rng(0)
    truth = (rng.random((30, 1))[:] > rng.random((1, 300))).astype(np.uint8)
    np.save(tmp_path / "R.npy", truth[:20])
    np.save(tmp_path / "E.npy", truth[20:])
    args = ("bench", "experiment", "--rank", tmp_path / "R.npy", "--eval", tmp_path / "E.npy")
    result = lifelong(*args, "--budgets", "8,16,...,256", "--sort", "sum", "--sampling", "uniform", "--json")
    assert result.exit_code == 0, result.output
    assert [row["budget"] for row in json.loads(result.stdout)] == [8, 16, 32, 64, 128, 256]
    table = lifelong(*args, "--budgets", "8,16,...,256").stdout
    assert "rank:     20 models x 300 samples\nevaluate: 10 models x 300 samples\n" in table  # models first
    assert "(" not in table.split("budget:")[0]  # no tuple reprs of shapes
    assert "8,16,...,16384" in lifelong("bench", "experiment", "--help").stdout.replace("\n", "").replace(" ", "")
    refused = lifelong(*args, "--budgets", "8,16,...,100")  # a usage error, as the flags are read
    assert refused.exit_code == 2 and "error: Invalid value for '--budgets'" in refused.stderr
    assert "geometric run" in refused.stderr
    refused = lifelong("bench", "beyond", "--matrix", tmp_path / "R.npy", "--budgets", "8,x")
    assert refused.exit_code == 2 and "error: Invalid value for '--budgets'" in refused.stderr
    assert "did you mean 'confidence'" in error_of(lifelong(*args, "--sort", "confidense"))
    assert "--rank-confidence" in error_of(lifelong(*args, "--sort", "confidence"))


def write_matrix(folder, rows, n=60, seed=0):
    rng = np.random.default_rng(seed)
    truth = (rng.random((rows, 1)) > rng.random((1, n))).astype(np.uint8)
    np.save(folder / "m.npy", truth)
    with open(folder / "samples.csv", "w") as handle:
        handle.write("source,domain,label,content_hash\n" + "".join(f"p,clean,0,h{seed}-{j}\n" for j in range(n)))
    (folder / "models.csv").write_text("name\n" + "".join(f"z{i}\n" for i in range(rows)))
    return truth


def test_import_and_create_take_resume_and_overwrite(tmp_path):
    truth = write_matrix(tmp_path, 8)
    small = tmp_path / "small"
    small.mkdir()
    write_matrix(small, 5)
    np.save(small / "m.npy", truth[:5])  # the first 5 models of the same samples: the zoo before it grew
    store = tmp_path / "store"

    def files(folder):
        return ("--matrix", folder / "m.npy", "--samples", folder / "samples.csv", "--models", folder / "models.csv")

    assert lifelong("bench", "import", store, *files(small)).exit_code == 0
    message = error_of(lifelong("bench", "import", store, *files(tmp_path)))
    assert (
        "already holds a store with 5 models x 60 samples" in message
        and "--resume" in message
        and "--overwrite" in message
    )
    grown = lifelong("bench", "import", store, *files(tmp_path), "--resume")
    assert grown.exit_code == 0 and "added 3 models, now 8 models x 60 samples" in words(grown.stdout)
    rows = json.loads(lifelong("bench", "status", store, "--json").stdout)["leaderboard"]
    assert {r["name"]: r["accuracy"] for r in rows} == {f"z{i}": pytest.approx(truth[i].mean()) for i in range(8)}
    again = lifelong("bench", "import", store, *files(tmp_path), "--resume")
    assert again.exit_code == 0 and "holds every model of this import already" in words(again.stdout)
    other = tmp_path / "other"
    other.mkdir()
    write_matrix(other, 4, seed=1)
    assert "holds other samples" in error_of(lifelong("bench", "import", store, *files(other), "--resume"))
    assert lifelong("bench", "import", store, *files(other), "--overwrite").exit_code == 0
    assert json.loads(lifelong("bench", "status", store, "--json").stdout)["m"] == 4
    assert "not both" in error_of(lifelong("bench", "import", store, *files(other), "--resume", "--overwrite"))
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") or p.suffix == ".work"] == []  # none left

    message = error_of(lifelong("bench", "create", store))
    assert "4 models x 60 samples" in message and "--resume" in message and "--overwrite" in message
    kept = lifelong("bench", "create", store, "--resume")
    assert kept.exit_code == 0 and json.loads(lifelong("bench", "status", store, "--json").stdout)["m"] == 4
    assert lifelong("bench", "create", store, "--overwrite").exit_code == 0
    assert lifelong("bench", "status", store).stdout.strip() == f"{store}: empty store (0 models x 0 samples)"
    (tmp_path / "zoo").mkdir()
    (tmp_path / "zoo" / "zoo.json").write_text("{}")
    message = error_of(lifelong("bench", "build-zoo", tmp_path / "zoo", "--models", "1"))
    assert "--resume" in message and "--overwrite" in message


def test_bench_errors_are_in_cli_words(tmp_path):
    write_matrix(tmp_path, 6)
    store = tmp_path / "store"
    args = ("--matrix", tmp_path / "m.npy", "--samples", tmp_path / "samples.csv", "--models", tmp_path / "models.csv")
    assert lifelong("bench", "import", store, *args).exit_code == 0
    assert "lifelong bench sort" in error_of(lifelong("bench", "plan-model", store, "--budget", "8"))
    assert lifelong("bench", "sort", store).exit_code == 0
    (tmp_path / "garbage.npy").write_text("these are not outcomes")
    message = error_of(lifelong("bench", "add-model", store, "--name", "x", "--results", tmp_path / "garbage.npy"))
    assert "garbage.npy is not a NumPy .npy file" in message
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    message = error_of(lifelong("bench", "add-model", store, "--name", "x", "--results", tmp_path / "objects.npy"))
    assert "objects.npy" in message and "Python objects" in message
    message = error_of(lifelong("bench", "plan-model", store, "--budget", "8", "--sampling", "unifrom"))
    assert "did you mean 'uniform'" in message
    assert "models.csv lacks the column(s) source, domain, label, content_hash (it has name)" in error_of(
        lifelong(
            "bench", "import", tmp_path / "s2", "--matrix", tmp_path / "m.npy", "--samples", tmp_path / "models.csv"
        )
    )
    from lifelong.sortsearch.store import BenchStore

    with BenchStore.open(store) as bench, pytest.raises(KeyError, match="did you mean 'z1'"):
        bench.model_by_name("z11")
