"""The report in headless Chromium: every figure of the page loads, and the page renders (non-blank screenshot).

The page is that of ordinary, accuracy-matrix (CLEAR-style) and unfinished runs, so that every kind of figure
and the status of runs that did not finish are checked. Skipped where no Chromium is installed (Debian:
`apt-get install chromium`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from metrics.test_analysis import write_run
from PIL import Image, ImageStat
from report.test_html import NASTY, image_sources, write_mixed_runs

from lifelong.report.html import write_report

BROWSER = next(
    filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"))), None
)
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium binary found; install it with apt-get install chromium"
)

CONTROL = "missing-on-purpose.png"  # an image that cannot load, so the check is shown to catch one
# Injected into a copy of the page only (the report itself carries no script): after window load, list each image
# with whether it loaded, and the text and colour of each status cell of an unfinished run.
PROBE = f"""<img src="{CONTROL}" alt="control">
<script>
window.addEventListener("load", function () {{
  var lines = [];
  for (var i = 0; i < document.images.length; i++) {{
    var img = document.images[i];
    lines.push(img.getAttribute("src") + "=" + (img.complete && img.naturalWidth > 0));
  }}
  var out = document.createElement("pre");
  out.id = "image-check";
  out.textContent = lines.join("\\n");
  document.body.appendChild(out);
  var statuses = [];
  var cells = document.querySelectorAll("tr.unfinished td.status-bad");
  for (var j = 0; j < cells.length; j++) {{
    statuses.push(getComputedStyle(cells[j]).color + " " + cells[j].textContent.trim());
  }}
  var status = document.createElement("pre");
  status.id = "status-check";
  status.textContent = statuses.join("\\n");
  document.body.appendChild(status);
}});
</script>
</body>"""


def chromium(profile: Path, *args: str) -> str:
    """Run headless Chromium with a throwaway profile and no network side-traffic; return its stdout."""
    command = [
        str(BROWSER),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",  # run the page's load handlers before dumping or capturing
        *args,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"{command} failed ({result.returncode}): {result.stderr[-3000:]}"
    return result.stdout


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    runs = write_mixed_runs(root / "runs")
    runs.append(write_run(root / "runs", f"syn-{NASTY}", NASTY, 0, [0.1, 0.4, 0.2, 0.5, 0.1, 0.2]))
    return write_report(runs, root / "report")


def test_every_figure_loads(report: Path, tmp_path: Path) -> None:
    probe = report.with_name("probe.html")
    probe.write_text(report.read_text(encoding="utf-8").replace("</body>", PROBE), encoding="utf-8")
    dom = chromium(tmp_path / "profile", "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="image-check">(.*?)</pre>', dom, re.DOTALL)
    assert found, f"the probe script did not run; dumped DOM ends with {dom[-500:]!r}"
    loaded = dict(line.rsplit("=", 1) for line in found.group(1).splitlines())
    sources = image_sources(report)
    assert len(sources) >= 9 and list(loaded) == [*sources, CONTROL]
    assert {"bucket_errors_1.png", "accuracy_matrix_1.png", "regret.png"} <= set(sources)
    assert loaded.pop(CONTROL) == "false"
    assert loaded == dict.fromkeys(sources, "true")
    statuses = re.search(r'<pre id="status-check">(.*?)</pre>', dom, re.DOTALL).group(1).splitlines()
    assert len(statuses) == 3  # killed, failed and interrupted runs: their status cells are drawn in the warning colour
    assert all(line.startswith("rgb(163, 58, 0) ") for line in statuses), statuses
    assert any("failed" in line for line in statuses) and any("interrupted after" in line for line in statuses)


def test_screenshot_is_not_blank(report: Path, tmp_path: Path) -> None:
    screenshot = tmp_path / "screenshot.png"
    chromium(
        tmp_path / "profile",
        "--hide-scrollbars",
        "--window-size=1280,3000",
        f"--screenshot={screenshot}",
        report.as_uri(),
    )
    with Image.open(screenshot) as image:
        assert image.size == (1280, 3000)
        rgb = image.convert("RGB")
    gray = rgb.convert("L")
    low, high = gray.getextrema()
    assert high - low > 200  # dark text and lines on a light page
    drawn = sum(gray.histogram()[:200]) / (gray.width * gray.height)
    assert drawn > 0.01, f"only {drawn:.2%} of the screenshot is drawn"
    assert len(rgb.getcolors(maxcolors=rgb.width * rgb.height)) > 50  # the figures' colours, not just text
    assert max(ImageStat.Stat(rgb).stddev) > 10
