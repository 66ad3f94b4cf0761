"""Converters whose labels or images are derived from the artefacts as dm_nevis derives them (poses, rotations).

- `pose_bins` (`pose_bin_rows`): head-pose datasets with one pose file per image (BIWI's
  `frame_<n>_pose.txt`: a 3x3 rotation matrix in its first three lines). Each matrix becomes yaw, pitch and roll
  in degrees (pyquaternion's `yaw_pitch_roll`: R = Rx(roll) Ry(pitch) Rz(yaw), via its matrix-to-quaternion
  trace method); each angle is cut into `bins` (5) equal-frequency bins over every pose file, and an image is
  multi-label: bin + bins * angle index (yaw 0, pitch 1, roll 2), so labels 0..14. `pose_suffix`
  ("_pose.txt") and `image_suffix` ("_rgb.png") pair each pose file with its image (pose files without one
  still count for the bins); `subject` (a regex with group `subject`, a number) and `subject_splits = {train =
  [5, 6, ...], val = [...], test = [...]}` give the split by subject.
- `rotated_idx` (`convert_rotated_idx`): IDX files with one split's images rotated (dm_nevis's MNIST-rot):
  `rotate` (the IDX prefix rotated, "train"; the others are copied as they are), `seed` (np.random.seed once, then
  one np.random.randint(0, 360) per image in file order, the angle of scipy.ndimage.rotate(image, angle,
  reshape=False): cubic spline, zero fill, uint8). `stored_splits = {seed = 0, fractions = {dev = 0.15, ...}}`:
  dm_nevis draws the angles anew in every split generator it writes (in sorted split order, each a pass over
  every image), so an image gets the angle of its split's pass, its split drawn by
  RandomState(seed).multinomial(1, fractions) in file order.
"""

from __future__ import annotations

import re
from math import sqrt
from pathlib import Path
from typing import Any

import numpy as np

from lifelong.data.fetch.conversion import Conversion, Row
from lifelong.data.fetch.converters_tables import place

ANGLES = ("yaw", "pitch", "roll")  # the order of pyquaternion's yaw_pitch_roll, hence of the label blocks


def quaternion_of(matrix: np.ndarray) -> np.ndarray:
    """(w, x, y, z) of a rotation matrix by the trace method pyquaternion uses (column-vector convention)."""
    m = matrix.T
    if m[2, 2] < 0:
        if m[0, 0] > m[1, 1]:
            t = 1 + m[0, 0] - m[1, 1] - m[2, 2]
            q = [m[1, 2] - m[2, 1], t, m[0, 1] + m[1, 0], m[2, 0] + m[0, 2]]
        else:
            t = 1 - m[0, 0] + m[1, 1] - m[2, 2]
            q = [m[2, 0] - m[0, 2], m[0, 1] + m[1, 0], t, m[1, 2] + m[2, 1]]
    elif m[0, 0] < -m[1, 1]:
        t = 1 - m[0, 0] - m[1, 1] + m[2, 2]
        q = [m[0, 1] - m[1, 0], m[2, 0] + m[0, 2], m[1, 2] + m[2, 1], t]
    else:
        t = 1 + m[0, 0] + m[1, 1] + m[2, 2]
        q = [t, m[1, 2] - m[2, 1], m[2, 0] - m[0, 2], m[0, 1] - m[1, 0]]
    return np.array(q, dtype=np.float64) * (0.5 / sqrt(t))


def yaw_pitch_roll(matrix: np.ndarray) -> tuple[float, float, float]:
    """Yaw, pitch, roll in degrees with R = Rx(roll) Ry(pitch) Rz(yaw) (pyquaternion's convention and arithmetic)."""
    w, x, y, z = q = quaternion_of(matrix)
    if abs(1.0 - float(np.dot(q, q))) >= 1e-14:  # pyquaternion normalises only a quaternion that is not unit
        w, x, y, z = q / sqrt(float(np.dot(q, q)))
    yaw = np.arctan2(2 * (w * z - x * y), 1 - 2 * (y**2 + z**2))
    pitch = np.arcsin(2 * (w * y + z * x))
    roll = np.arctan2(2 * (w * x - y * z), 1 - 2 * (x**2 + y**2))
    return tuple(float(np.degrees(a)) for a in (yaw, pitch, roll))


def equal_frequency_edges(values: np.ndarray, bins: int) -> np.ndarray:
    """bins + 1 edges from the minimum to the maximum, at evenly spaced positions of the sorted values
    (interpolated; dm_nevis's `uniform_bins`)."""
    n = len(values)
    return np.interp(np.linspace(0, n, bins + 1), np.arange(n), np.sort(values))


def bin_of(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """0-based bin of each value: edges[j] <= v < edges[j + 1], the maximum in the last bin."""
    return np.minimum(np.digitize(values, edges), len(edges) - 1) - 1


def read_pose(job: Conversion, path: Path) -> np.ndarray:
    """The 3x3 rotation matrix in the first three lines of a pose file; anything else fails naming the file."""
    lines = path.read_text(errors="replace").splitlines()[:3]
    try:
        matrix = np.array([[float(v) for v in line.split()] for line in lines], dtype=np.float64)
    except ValueError:
        matrix = np.empty(0)
    if matrix.shape != (3, 3):
        raise job.fail(f"{path.name}: the first three lines are not a 3x3 matrix of numbers")
    # pyquaternion (which dm_nevis calls with atol=1e-4) accepts only a special orthogonal matrix
    if not np.allclose(matrix @ matrix.T, np.eye(3), atol=1e-4) or not np.isclose(np.linalg.det(matrix), 1, atol=1e-4):
        raise job.fail(f"{path.name}: its matrix is not a rotation (orthogonal with determinant 1)")
    return matrix


def _subject_split(job: Conversion, relative: str, options: dict[str, Any]) -> str | None:
    if not options.get("subject"):
        return None
    match = re.search(options["subject"], relative)
    if match is None:
        raise job.fail(f"{relative}: no subject in its path (subject = {options['subject']!r})")
    number = int(match.group("subject"))
    for split, subjects in options.get("subject_splits", {}).items():
        if number in [int(s) for s in subjects]:
            return split
    raise job.fail(f"{relative}: subject {number} is in no list of subject_splits")


def pose_bin_rows(job: Conversion, options: dict[str, Any]) -> list[Row]:
    """Multi-label rows: each image's yaw, pitch and roll bins (see the module docstring)."""
    base = job.unpacked()
    pose_suffix, image_suffix = options.get("pose_suffix", "_pose.txt"), options.get("image_suffix", "_rgb.png")
    bins = int(options.get("bins", 5))
    poses = sorted(job.find(f"*{pose_suffix}"))
    angles = np.array([yaw_pitch_roll(read_pose(job, p)) for p in poses])
    labels = np.stack([bin_of(angles[:, k], equal_frequency_edges(angles[:, k], bins)) for k in range(3)], axis=1)
    rows: list[Row] = []
    for pose, binned in zip(poses, labels, strict=True):
        image = job.inside_unpacked(pose.name[: -len(pose_suffix)] + image_suffix, "option image_suffix", pose.parent)
        if not image.is_file():
            continue
        split = _subject_split(job, image.relative_to(base).as_posix(), options)
        rows.append((place(job, image, base), [str(int(b) + bins * k) for k, b in enumerate(binned)], split))
    return rows


def rotation_angles(n: int, seed: int, stored: dict[str, Any] | None) -> np.ndarray:
    """The angle dm_nevis gives each of n images (see `stored_splits` in the module docstring)."""
    draws = np.random.RandomState(seed)
    if not stored:
        return draws.randint(0, 360, size=n)
    names = sorted(stored["fractions"])
    passes = draws.randint(0, 360, size=(len(names), n))  # pass k: the k-th split generator written
    chooser = np.random.RandomState(int(stored.get("seed", 0)))
    fractions = [float(stored["fractions"][name]) for name in names]
    which = np.array([np.argmax(chooser.multinomial(1, fractions)) for _ in range(n)], dtype=np.int64)
    return passes[which, np.arange(n)]


def convert_rotated_idx(job: Conversion) -> None:
    """IDX files into out/ (uncompressed), the `rotate` prefix's images rotated as dm_nevis's MNIST-rot."""
    from scipy.ndimage import rotate

    from lifelong.data.images import CorruptImageError
    from lifelong.data.sources.idx import IDX_FILE_NAME, read_idx

    prefix = job.options.get("rotate", "train")
    found = {}
    for path in job.find("*idx*-ubyte*"):
        match = IDX_FILE_NAME.match(path.name)
        if match:
            found[(match["prefix"], match["what"])] = (path, int(match["ndim"]))
    if (prefix, "images") not in found:
        raise job.fail(f"no {prefix}-images-idx3-ubyte[.gz] in the artefacts to rotate")
    for (name, what), (path, ndim) in sorted(found.items()):
        try:
            array = read_idx(path, ndim)
        except CorruptImageError as exc:
            raise job.fail(str(exc)) from None
        if (name, what) == (prefix, "images"):
            angles = rotation_angles(len(array), int(job.options.get("seed", 99999)), job.options.get("stored_splits"))
            array = np.stack(
                [rotate(image, int(angle), reshape=False) for image, angle in zip(array, angles, strict=True)]
            )
        header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
        target = job.inside_out(f"{name}-{what}-idx{ndim}-ubyte", "archive member name")
        target.write_bytes(header + array.astype(np.uint8).tobytes())
