"""LoCoT2V: the embedded world, one offline evaluation, the one-sample world and a frame-feature fake."""
import shutil
from pathlib import Path

import numpy as np

from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_assets.locot2v import assets, dataset
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths
from tests.support import DATA, QUIET, ROOT  # noqa: F401

GENERATORS = ("locot2v_smooth", "locot2v_jerky", "locot2v_frozen", "locot2v_drift")


def _world(tmp_path, generators=GENERATORS):
    data = tmp_path / "data"
    shutil.copytree(DATA / "locot2v", data / "locot2v")
    for g in generators:
        shutil.copytree(DATA / "generators" / g, data / "generators" / g)
    return data


def _run(instance, data, store, judge=None, generator_assets=assets.GENERATOR_ASSETS):
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(store), **({"judge": judge} if judge else {}))
    gens, errors = discover_generators(paths.generators_dir, "locot2v")
    stats = evaluate(instance, assets=assets.ASSETS, resources=resources, partitions=assets.P,
                     items=dataset.discover_samples(data / "locot2v" / "samples"), generators=gens,
                     item_assets=assets.ITEM_ASSETS, generator_assets=generator_assets,
                     aggregate_assets=assets.AGGREGATE_ASSETS, progress=lambda s: None)
    return stats, resources, errors


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
