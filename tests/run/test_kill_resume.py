"""A run killed with SIGKILL and resumed ends with the same records as an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waits import wait_for

from lifelong.commands.runner import RunSpec, execute
from lifelong.results.store import ResultsDB, RunFolder

MANIFEST = """
name: killable
meta_test_from_year: 2003
tasks:
  - {name: digits, source: "builtin:digits", year: 2001, domain: ocr, resolution: 16,
     options: {n_per_class: 40, seed: 0}}
  - {name: shapes, source: "builtin:shapes", year: 2002, resolution: 16, options: {n_per_class: 30, seed: 1, size: 16}}
  - {name: digits, source: "builtin:digits", year: 2003, domain: ocr, resolution: 16,
     options: {n_per_class: 40, seed: 0}}
  - {name: textures, source: "builtin:textures", year: 2004, resolution: 16,
     options: {n_per_class: 30, seed: 2, size: 16}}
"""

# Runs the spec in a child process that stops at its third train event: it touches the marker file (argv[3]) and
# waits there, so the parent kills it mid-stream at a known point, however slow the machine.
CHILD = """
import json, sys, threading
from pathlib import Path
from lifelong.learners import learner_class
from lifelong.commands.runner import RunSpec, execute
cls = learner_class(sys.argv[1])
original = cls.train
trained = []
def train_until_the_third(self, event, state):
    trained.append(event)
    if len(trained) == 3:
        Path(sys.argv[3]).touch()
        threading.Event().wait()  # until killed
    return original(self, event, state)
cls.train = train_until_the_third
execute(RunSpec(**json.loads(sys.argv[2])))
"""

LEARNERS = {"nearest-mean": {}, "independent": {"epochs": 1, "min_batch_size": 16}}


def comparable(records):
    return [{k: v for k, v in r.items() if k not in ("seconds", "run_id")} for r in records]


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_sigkill_then_resume_matches_uninterrupted_run(tmp_path, learner):
    manifest = tmp_path / "killable.yaml"
    manifest.write_text(MANIFEST)
    spec = {"stream": str(manifest), "learner": learner, "learner_options": LEARNERS[learner]}
    killed_out, clean_out = tmp_path / "killed", tmp_path / "clean"

    waiting = tmp_path / "waiting-at-the-third-train-event"
    child_spec = json.dumps({**spec, "out": str(killed_out)})
    child = subprocess.Popen([sys.executable, "-c", CHILD, learner, child_spec, str(waiting)])
    run_id = RunSpec(**spec).run_id
    wait_for(waiting.exists, "the child's third train event", limit_s=300, child=child)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done_before_kill = len(RunFolder(killed_out / run_id).read_records())
    assert done_before_kill == 4  # tasks 1 and 2 trained and tested; the third train event never finished

    resumed = execute(RunSpec(**spec, out=str(killed_out), resume=True))
    clean = execute(RunSpec(**spec, out=str(clean_out)))
    assert comparable(resumed["records"]) == comparable(clean["records"])
    assert resumed["mean_error"] == clean["mean_error"]
    assert resumed["cumulative_train_flops"] == clean["cumulative_train_flops"]
    # the run folder and the database hold exactly one record per event, nothing lost or doubled
    assert comparable(RunFolder(killed_out / run_id).read_records()) == comparable(clean["records"])
    db = ResultsDB(killed_out)
    assert comparable(db.events(run_id)) == comparable(clean["records"])
    assert {r["run_id"]: r["status"] for r in db.runs()} == {run_id: "finished"}


def test_existing_run_needs_resume_or_overwrite(tmp_path):
    manifest = tmp_path / "killable.yaml"
    manifest.write_text(MANIFEST)
    spec = RunSpec(stream=str(manifest), learner="nearest-mean", out=str(tmp_path / "out"), stop_after=2)
    first = execute(spec)
    assert first["events_done"] == 2
    with pytest.raises(FileExistsError, match="--resume"):
        execute(spec)
    again = execute(RunSpec(stream=str(manifest), learner="nearest-mean", out=str(tmp_path / "out"), overwrite=True))
    assert again["events_done"] == 8
    assert len(ResultsDB(Path(tmp_path / "out")).events(again["run_id"])) == 8
