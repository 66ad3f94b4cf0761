"""reproduce.py sections `clear-table`, `clear`, `clear-real`: docs/clear.md's clear-mini table, from its commands.

`clear` (the README's two finetune iid rows) and `clear-real` (the Lite0 row) are parts of `clear-table`.

Rows: learners x regime (the resnet_mini CNN; a linear head on the SimCLR encoder of `lifelong pretrain-ssl`; a
linear head on ImageNet EfficientNet-Lite0 features) x protocol (iid, streaming), with the seeds of ROWS.
Runs land in the folders of reproduce.py's `clear` and `clear-real` sections (clear-cnn/, clear-linear/,
clear-real/; the encoder in encoders/clear-mini-simclr.pt), so in one --work folder the CNN and Lite0 runs are
shared; the SSL rows name the encoder by its path relative to the work folder (`clear` names it with the work
folder in front), so their run ids do not depend on where the work folder is and copied runs are found.
From nothing: the CNN and SSL rows about 50 minutes of runs on one core plus the SimCLR pretraining (measured:
80 runs on a 2-core Intel Xeon), the Lite0 row about 33 minutes more (its first seed encodes every image).
Prints the table in docs/clear.md's layout (mean ± std, ddof=1, in %; streaming: next-domain and FwT only),
each run's seconds and the machine the runs recorded, and writes it to WORK/clear-table.md.
--quick: the same commands on a tiny clear-mini (QUICK_STREAM), one seed, one epoch, the SSL encoder one epoch,
and only the rows of QUICK_ROWS (the others are the same command with another learner, regime or options).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from pathlib import Path

from _reproduce_common import call, row, run_group, summaries, this_machine

from lifelong.api import PretrainSslSpec, RunsSpec

IID = ("in_domain", "next_domain", "acc", "bwt", "fwt")
STREAMING = ("next_domain", "fwt")  # lifelong.metrics.accuracy_matrix.STREAMING_METRICS
COLUMNS = ("in-domain", "next-domain", "Acc", "BwT", "FwT")
ENCODER = Path("encoders") / "clear-mini-simclr.pt"  # in the work folder (where `clear` writes it), named relative
REGIMES = {  # regime: (label, --out folder, learner options)
    "CNN": ("CNN", "clear-cnn", {}),
    "SSL": ("linear, SSL", "clear-linear", {"encoder": str(ENCODER)}),  # relative: the id does not name the work folder
    "lite0": ("linear, EfficientNet-Lite0, ImageNet", "clear-real", {"encoder": "efficientnet-lite0"}),
}
# (learner, label override, regime, protocol, seeds, extra learner options), in the docs' order
ROWS = [
    ("finetune", None, "CNN", "iid", 5, {}),
    ("finetune", None, "CNN", "streaming", 5, {}),
    ("scratch", None, "CNN", "iid", 5, {}),
    ("er", None, "CNN", "iid", 3, {}),
    ("replay", None, "CNN", "iid", 3, {}),
    ("gdumb", None, "CNN", "iid", 3, {}),
    ("ewc", None, "CNN", "iid", 2, {}),
    ("si", None, "CNN", "iid", 2, {}),
    ("lwf", None, "CNN", "iid", 2, {}),
    ("agem", None, "CNN", "iid", 5, {}),
    ("agem", None, "CNN", "streaming", 5, {}),
    ("cwr", None, "CNN", "iid", 5, {}),
    ("cwr", None, "CNN", "streaming", 5, {}),
    ("finetune", None, "SSL", "iid", 5, {}),
    ("finetune", None, "SSL", "streaming", 5, {}),
    ("scratch", None, "SSL", "iid", 5, {}),
    ("er", None, "SSL", "iid", 5, {}),
    ("replay", None, "SSL", "iid", 5, {}),
    ("replay", "replay, biased alpha=2 (linear, SSL)", "SSL", "iid", 5, {"buffer": "biased", "alpha": 2}),
    ("gdumb", None, "SSL", "iid", 5, {}),
    ("ewc", None, "SSL", "iid", 5, {}),
    ("si", None, "SSL", "iid", 5, {}),
    ("lwf", None, "SSL", "iid", 5, {}),
    ("finetune", None, "lite0", "iid", 5, {}),
]
QUICK_STREAM = {"n_per_class": 20, "num_buckets": 4, "unlabeled_per_bucket": 200}  # reproduce.py's
QUICK_ROWS = {("finetune", "CNN", "iid"), ("finetune", "CNN", "streaming"), ("finetune", "SSL", "iid")}
QUICK_OPTIONS = {"CNN": {"epochs": 1}, "SSL": {"linear_epochs": 1}, "lite0": {"linear_epochs": 1}}


def _cell(values: list[float]) -> str:
    """'98.1 ± 0.2' (in %, std ddof=1); the mean alone for one seed, '-' for none."""
    if not values:
        return "-"
    mean = f"{100 * statistics.fmean(values):.1f}"
    return mean if len(values) == 1 else f"{mean} ± {100 * statistics.stdev(values):.1f}"


def clear_table(work: Path, quick: bool, rows: list = ROWS, name: str = "clear-table") -> list[dict]:
    """Run `rows`' commands in `work`, print their table and write it to WORK/<name>.md."""
    started = time.perf_counter()
    stream = QUICK_STREAM if quick else {}
    encoder = work / ENCODER
    if quick and any((r[0], r[2], r[3]) in QUICK_ROWS for r in rows):
        chosen = [r for r in rows if (r[0], r[2], r[3]) in QUICK_ROWS]
        print(f"--quick: {len(rows) - len(chosen)} rows skipped (the same command with another learner or regime)")
        rows = chosen
    if any(r[2] == "SSL" for r in rows) and not encoder.exists():
        spec = PretrainSslSpec(ENCODER, epochs=1 if quick else None, stream_options=stream, resume=True)
        call(work, "pretrain_ssl", spec)
    lines = [
        "| learner | protocol | seeds | " + " | ".join(COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(COLUMNS),
    ]
    timing = []
    machines: dict[str, list[str]] = {}
    common = []
    for learner, label, regime, protocol, seeds, extra in rows:
        regime_label, out, options = REGIMES[regime]
        label = label or f"{learner} ({regime_label})"
        options = {**options, **extra, **(QUICK_OPTIONS[regime] if quick else {})}
        spec = RunsSpec("clear-mini", learner, seeds=1 if quick else seeds, out=out, learner_options=options,
                        stream_options=stream, protocol=protocol)  # fmt: skip
        call(work, "run", dataclasses.replace(spec, resume=True))
        found = summaries(work / out, run_group(spec) + "-seed")  # the run folders of exactly this command
        infos = [info for _, info in found]
        metrics = IID if protocol == "iid" else STREAMING
        values = {m: [s["clear_metrics"][m] for s, _ in found] for m in metrics}
        cells = [_cell(values[m]) if m in metrics else "-" for m in IID]
        lines.append(f"| {label} | {protocol} | {len(found)} | " + " | ".join(cells) + " |")
        seconds = [s.get("timing", {}).get("total_seconds") for s, _ in found]
        timing.append(f"{label}, {protocol}: " + ", ".join(f"{t:.0f}" for t in seconds if t is not None) + " s")
        for info in infos:
            m = info.get("machine", {})
            key = (
                f"{m.get('cpu')}, {m.get('threads')} torch thread(s), torch {(info.get('versions') or {}).get('torch')}"
            )
            machines.setdefault(key, []).append(info.get("created", "?"))
        common += [row(f"clear-mini {protocol} {label}", m, values[m], infos) for m in metrics]
    table = "\n".join(lines)
    notes = [
        "",
        "seconds per run (summary.json timing.total_seconds), by seed:",
        *[f"  {t}" for t in timing],
        "machine the runs recorded (run.json): "
        + "; ".join(f"{k} ({len(v)} runs, {min(v)[:10]}..{max(v)[:10]})" for k, v in machines.items()),
        f"printed on: {this_machine()} in {time.perf_counter() - started:.0f} s",
    ]
    text = table + "\n" + "\n".join(notes) + "\n"
    print(text, end="", flush=True)
    (work / f"{name}.md").write_text(text)
    return common


def clear(work: Path, quick: bool) -> list[dict]:
    """The README's CLEAR rows: finetune over the iid protocol, the CNN and the linear head on the SimCLR encoder."""
    rows = [r for r in ROWS if r[0] == "finetune" and r[2] in ("CNN", "SSL") and r[3] == "iid"]
    return clear_table(work, quick, rows, "clear")


def clear_real(work: Path, quick: bool) -> list[dict]:
    """The linear regime on EfficientNet-Lite0 features (the first seed encodes every image: about 32 minutes)."""
    return clear_table(work, quick, [r for r in ROWS if r[2] == "lite0"], "clear-real")


SECTIONS = {"clear": clear, "clear-real": clear_real, "clear-table": clear_table}
