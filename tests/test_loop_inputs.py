"""Issue 39 (the daily loop): inputs a benchmark cannot use are one clear error naming the item, at read time.

LoCoT2V: a sample without 'herd_info' (and without 'herd_questions') was accepted and HERD went unscored for every
generator with nothing said at input time. NarrativeTrack: an answerer card without 'model' was accepted by `bench
evaluate`, which then processed every video for minutes before each answer partition failed on it."""
import json

import pytest

from bench_assets import cli
from bench_assets.core.generators import read_generator
from bench_assets.locot2v import dataset
from bench_assets.locot2v.constants import HERD_DIMENSIONS
from tests.support import DATA

SAMPLES = DATA / "locot2v" / "samples"


def _sample(**change):
    raw = json.loads((SAMPLES / "life_1.json").read_text())
    raw.update(change)
    for k, v in list(raw.items()):
        if v is KeyError:
            del raw[k]
    return raw


def test_a_sample_without_herd_info_is_one_error_naming_it():
    with pytest.raises(dataset.SampleError, match=r"^sample life_1: 'herd_info' is missing"):
        dataset.parse_sample(_sample(herd_info=KeyError, herd_questions=None), "x")
    with pytest.raises(dataset.SampleError, match=r"^sample life_1: 'herd_info' is empty"):
        dataset.parse_sample(_sample(herd_info={}, herd_questions=None), "x")
    with pytest.raises(dataset.SampleError, match=r"^sample life_1: 'herd_info' has unknown dimension\(s\) "
                                                  r"\['Emotional Respnse'\]"):
        dataset.parse_sample(_sample(herd_info={"Emotional Respnse": "calm"}, herd_questions=None), "x")
    with pytest.raises(dataset.SampleError, match=r"'herd_info' dimension\(s\) \['Themes'\] must be non-empty"):
        dataset.parse_sample(_sample(herd_info={"Themes": ""}, herd_questions=None), "x")
    with pytest.raises(dataset.SampleError, match=r"^sample life_1: 'herd_questions' must be a list"):
        dataset.parse_sample(_sample(herd_questions="Is it calm?"), "x")


def test_what_a_sample_may_do_without_herd_info_still_parses():
    # explicit null: HERD left unscored on purpose (the validity suite's samples); supplied questions need no info
    assert dataset.parse_sample(_sample(herd_info=None, herd_questions=None), "x").herd_info == {}
    q = [{"dimension": HERD_DIMENSIONS[0], "question": "Calm?", "polarity": "positive"}]
    assert dataset.parse_sample(_sample(herd_info=KeyError, herd_questions=q), "x").herd_questions == tuple(q)
    for path in sorted(SAMPLES.glob("*.json")):     # every shipped sample
        assert dataset.load_sample(path).herd_info


def _card(folder, text):
    folder.mkdir(parents=True)
    (folder / "generator.yaml").write_text(text)
    return folder


def test_an_answerer_card_without_a_model_is_refused_before_any_work(tmp_path, monkeypatch, capsys):
    bad = _card(tmp_path / "gens" / "nomodel", "name: nomodel\nbenchmark: narrativetrack\nkind: answerer\n"
                                               "frames: 20\ndescription: x\n")
    good = _card(tmp_path / "gens" / "haiku", "name: haiku\nbenchmark: narrativetrack\nkind: answerer\n"
                                              "model: claude-haiku-4-5\n")
    errors: list[str] = []
    kept = cli.card_checked("narrativetrack", [read_generator(bad), read_generator(good)], errors, single=False)
    assert [g.name for g in kept] == ["haiku"]           # every other answerer still scores
    assert errors == ["answerer 'nomodel': generator.yaml needs a 'model' (the video MLLM's model id)"]

    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    rc = cli.main(["evaluate", "--benchmark", "narrativetrack", "--generator", str(bad)])
    err = capsys.readouterr().err
    assert rc == 2 and "answerer 'nomodel': generator.yaml needs a 'model'" in err, err
    assert not (tmp_path / "store" / "tables").exists()   # refused before any video was processed
