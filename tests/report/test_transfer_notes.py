"""The report's forward-transfer notes: one line per reason and set of datasets, not one per run and dataset."""

from types import SimpleNamespace

from lifelong.report.runs import forward_transfer_rows


def _run(label, curves):
    """A run whose train records hold these (task, occurrence, dev curve) triples."""
    records = [
        {"type": "train", "task_name": name, "occurrence": occurrence, "dev_curve": curve}
        for name, occurrence, curve in curves
    ]
    return SimpleNamespace(label=label, data=SimpleNamespace(records=records))


def test_runs_without_dev_curves_share_one_note_per_set_of_datasets():
    no_curves = [("a", 0, []), ("b", 0, []), ("a", 1, []), ("b", 1, [])]
    runs = [_run("R1", no_curves), _run("R2", no_curves), _run("R3", no_curves[:1] + no_curves[2:3])]
    runs.append(_run("R4", [("a", 0, [0.5, 0.4]), ("a", 1, [0.3, 0.2])]))
    rows, notes = forward_transfer_rows(runs)
    assert [(row["label"], row["dataset"]) for row in rows] == [("R4", "a")]
    assert float(rows[0]["ft"]) > 0  # the second occurrence learned faster
    assert len(notes) == 2
    assert notes[0].startswith("R1, R2: a, b: no dev curve for the first and second occurrence")
    assert notes[1].startswith("R3: a: no dev curve")
