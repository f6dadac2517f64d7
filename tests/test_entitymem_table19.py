"""Table 19 (character identity by recurrence gap, both arms) on rows EntityBench really computed: the embedded
world's faithful and drift generators' shots of e0003, placed as the two arms of an EntityMem configuration, scored
by `bench entitymem --evaluate`'s own path (evaluate_and_compare), and Table 19 read back from the store."""
from __future__ import annotations

import shutil

import pytest
import yaml

from bench_assets.entitymem import configs, rows


def test_table19_from_entitybenchs_own_gap_decay_rows(small_world, tmp_path, monkeypatch, capsys):
    data, episodes = small_world(("faithful", "drift"), episodes=["e0003"])
    cfg = configs.EntityMemConfig("real", "faithful as EntityMem, drift as its control")
    for src, arm in (("faithful", "entitymem"), ("drift", "control")):
        dst = data / "generators" / cfg.generator_names()[arm]
        shutil.move(data / "generators" / src, dst)
        card = yaml.safe_load((dst / "generator.yaml").read_text())
        card["name"] = dst.name
        (dst / "generator.yaml").write_text(yaml.safe_dump(card))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(data))
    monkeypatch.setenv("BENCH_GENERATORS_ROOT", str(data / "generators"))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    from bench_assets.entitymem.cli import evaluate_and_compare
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    resources = build_resources(paths=BenchPaths())
    t5_md, t19_md, failed = evaluate_and_compare(cfg, episodes, resources)
    assert failed == []
    # issue 39: the evaluation (the longest part of --evaluate) shows its progress in shots scored, as `bench
    # evaluate` does (before: none at all); e0003's shots for both arms
    import json
    import re
    n = 2 * len(json.loads((data / "entitybench" / "episodes" / "e0003.json").read_text())["shots"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if re.match(r"^\[\d\d:\d\d:\d\d\] entitybench ", ln)]
    assert any(re.search(rf"entitybench (\d+(\.\d)?)/{n} shots, .*\| entitymem_real x episode e0003", ln)
               for ln in err), err
    assert re.search(rf"entitybench {n}/{n} shots, .* shot/min, .*\| done$", err[-1]), err
    gap = resources["store"].query("SELECT * FROM entitybench_gap_decay WHERE entity_type = 'character' "
                                   "AND tier = 'all' AND signal = 'embedding_cosine'")
    assert set(gap.generator) == {"entitymem_real", "storymem-control_real"} and (gap.pairs > 0).all()
    t19 = rows.table19(rows.read_scores(resources["store"])[1])
    emb = t19[t19.signal == "embedding_cosine"]
    assert set(emb.arm) == {"EntityMem", "control"} and emb["mean"].notna().all()
    for arm, gen in (("EntityMem", "entitymem_real"), ("control", "storymem-control_real")):
        want = gap[gap.generator == gen].set_index("gap_bin")
        got = emb[emb.arm == arm].set_index("gap_bin")
        assert sorted(got.index) == sorted(want.index)
        assert got["mean"].tolist() == pytest.approx(want.loc[got.index, "mean"].tolist())
        assert got["pairs"].tolist() == want.loc[got.index, "pairs"].astype(int).tolist()
        # the printed table carries each value with its pairs, in the arm's row
        # the embedder that made these cosines is the offline profile's, not the paper's DINOv2: every value of
        # the row is starred and the row names it (HEAD printed them bare)
        line = next(x for x in t19_md.splitlines() if x.startswith(f"| real | embedding_cosine | {arm} |"))
        embedder = want["embedder"].iloc[0]
        assert "EfficientNet-Lite0" in embedder and (got["substitute"] == embedder).all()
        for b, r in want.iterrows():
            assert f"{r['mean']:.3f} ({int(r['pairs'])})*" in line
        assert line.endswith(f"| {embedder} (paper: DINOv2) |")
    assert "computed by a substitute model" in t19_md
