"""LoCoT2V: the embedded world, one offline evaluation, the one-sample world and a frame-feature fake."""
import shutil
from pathlib import Path

import numpy as np

from bench_assets.locot2v import assets, dataset
from tests.support import DATA, QUIET, ROOT, copy_world, run_benchmark  # noqa: F401

GENERATORS = ("locot2v_smooth", "locot2v_jerky", "locot2v_frozen", "locot2v_drift")


def _world(tmp_path, generators=GENERATORS):
    return copy_world(tmp_path, ["locot2v"], generators)


def _run(instance, data, store, judge=None, generator_assets=assets.GENERATOR_ASSETS):
    return run_benchmark("locot2v", instance, data, store, judge, generator_assets=generator_assets,
                         items=dataset.discover_samples(data / "locot2v" / "samples"))

GEN, SAMPLE = "locot2v_smooth", "nature_1"


def one_sample_world(data: Path, gen: str = GEN, sample: str = SAMPLE) -> None:
    """The embedded LoCoT2V data with one sample and one generator's output for it under ``data`` (shared by the
    LoCoT2V end-to-end tests that need a single partition)."""
    (data / "locot2v" / "samples").mkdir(parents=True)
    shutil.copy(ROOT / "data" / "locot2v" / "samples" / f"{sample}.json", data / "locot2v" / "samples")
    for f in (ROOT / "data" / "locot2v").iterdir():   # everything but the other samples (rrub and the like)
        if f.name != "samples":
            (shutil.copytree if f.is_dir() else shutil.copy)(f, data / "locot2v" / f.name)
    gdir = data / "generators" / gen
    gdir.mkdir(parents=True)
    for name in ("generator.yaml", f"{sample}.mp4"):
        shutil.copy(ROOT / "data" / "generators" / gen / name, gdir)


class _MeanColour:
    """Frame features that follow the picture: mean colour per quadrant."""

    def embed(self, images):
        out = []
        for im in images:
            h, w = im.shape[0] // 2, im.shape[1] // 2
            out.append(np.concatenate([im[a:a + h, b:b + w].reshape(-1, 3).mean(0)
                                       for a in (0, h) for b in (0, w)]) + 1.0)
        return np.stack(out)
