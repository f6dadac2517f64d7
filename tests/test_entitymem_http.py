"""EntityMem end to end against real HTTP servers on 127.0.0.1 speaking each backend's protocol: the agents over
OpenAI-compatible chat completions with structured output (through the judge), portraits over
``/v1/images/generations``, shots over ``/v1/videos/generations``; run as Dagster assets into generator folders.
The verification agent fails one portrait cut from the green key, which must bring a magenta retry; a continuation
shot must receive the previous shot's last frame as its first frame, apart from its references."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml

from bench_resources.generation import GenerationError, ImageGenerator, VideoBackbone
from bench_resources.generation.video import image_from_data_url, read_frames
from tests.support.fake_generation import FakeImages, FakeVideo, agent_answer, frames_close
from tests.support.fake_openai import FakeOpenAI
from tests.support.entitymem import EPISODE


@pytest.fixture
def servers():
    with FakeOpenAI(responder=agent_answer) as chat, FakeImages() as images, FakeVideo() as video:
        yield chat, images, video


@pytest.fixture
def world(tmp_path, monkeypatch, servers):
    chat, images, video = servers
    root = tmp_path / "data"
    (root / "entitybench" / "episodes").mkdir(parents=True)
    (root / "entitybench" / "episodes" / "t0001.json").write_text(json.dumps(EPISODE))
    (root / "entitymem" / "configs").mkdir(parents=True)
    cfg = {"name": "remote", "description": "fake servers", "candidates": 3, "n_frames": 6, "frame": [128, 72],
           "agents": {"backend": "judge", "judge_backend": "openai", "base_url": chat.base_url + "/v1",
                      "model": "fake-vl", "api_key_env": "", "mode": "live", "max_retries": 0},
           "image": {"backend": "openai", "base_url": images.base_url + "/v1", "model": "fake-flux"},
           "video": {"backend": "http", "base_url": video.base_url + "/v1", "model": "fake-backbone"}}
    (root / "entitymem" / "configs" / "remote.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(root))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")  # the benchmark's judge stays off; the agents' endpoint is live
    return tmp_path


def _generate(tmp_path):
    from bench_assets.entitymem.cli import generate
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    resources = build_resources(paths=BenchPaths(generators_root=str(tmp_path / "gens")))
    return generate("remote", ["t0001"], resources, log=lambda _m: None), resources


def test_entitymem_over_http_backends(world, servers):
    chat, images, video = servers
    out, resources = _generate(world)
    assert out["failed"] == []
    store = resources["store"]
    # --- the verification failure and its chroma retry, every attempt kept
    knight = [b["prompt"] for b in images.bodies if "Verdant Knight" in b["prompt"]]
    assert [("green chroma-key" in p, "magenta chroma-key" in p) for p in knight] == [(True, False), (False, True)]
    assert all(b["n"] == 3 and b["response_format"] == "b64_json" for b in images.bodies if "portrait" in b["prompt"])
    pano = [b for b in images.bodies if "panorama" in b["prompt"]]
    assert {b["size"] for b in pano} == {"1536x512"} and len(pano) == 2
    bank = store.query("SELECT * FROM entitymem_bank")
    row = bank[bank.name == "Verdant Knight"].iloc[0]
    ref = json.loads(row["reference_json"])
    assert [(a["chroma"], a["verdict"], a["failure"]) for a in ref["attempts"]] == \
        [("green", False, "transparent_clothing"), ("magenta", True, "none")]
    assert all(a["selected"] == 2 for a in ref["attempts"])                 # the selection agent's choice
    verify_q = [b for b in chat.bodies if "Check it before" in json.dumps(b)]
    assert any("image_url" in json.dumps(b) for b in verify_q)               # the verifier saw the cut-out
    assert bank.loc[bank.name == "the Hat", "reference"].iloc[0] == "attached"   # classify agent: a wearable
    # --- shots: references in order, first frame apart, the previous last frame for continuations
    idx = [i for i, b in enumerate(video.bodies) if any(r["role"] == "keyframe" for r in b["references"])]
    em, sent = [video.bodies[i] for i in idx], [video.sent[i] for i in idx]
    assert len(em) == 4
    roles = [[r["role"] for r in b["references"]] for b in em]
    assert roles[1] == ["portrait", "portrait", "portrait", "keyframe"]
    assert [r["label"] for r in em[1]["references"][:3]] == ["Verdant Knight", "Mara", "Bo"]
    assert [b["first_frame"] is not None for b in em] == [False, True, False, True]
    got = image_from_data_url(em[1]["first_frame"])
    assert frames_close(got, sent[0][-1])                                    # shot 1's last frame, decoded
    assert not frames_close(got, sent[2][-1])
    assert "[Verdant Knight] a knight with grey hair" in em[3]["prompt"]     # stored description injected
    # --- the generator folders, scored like any other
    folder = world / "gens" / "entitymem_remote" / "t0001"
    files = sorted(folder.glob("shot_*.mp4"))
    assert len(files) == 4
    f1, f2 = read_frames(files[0].read_bytes()), read_frames(files[1].read_bytes())
    assert f1[0].shape == (72, 128, 3) and len(f1) == 6
    assert not frames_close(f1[-1], f2[-1])                                  # videos vary with the input
    card = yaml.safe_load((world / "gens" / "entitymem_remote" / "generator.yaml").read_text())
    assert card["entitymem"]["offline_stand_in"] is False and "offline" not in card["description"]
    assert card["entitymem"]["backends"]["image"] == {"backend": "openai", "model": "fake-flux",
                                                      "base_url": images.base_url + "/v1"}
    control = [b for i, b in enumerate(video.bodies) if i not in idx]
    assert len(control) == 4 and all(r["role"] == "memory" for b in control for r in b["references"])
    assert [len(b["references"]) for b in control] == [0, 1, 2, 3]
    # --- again: nothing is asked or generated twice (step memo; the agents' answers also sit in the judge cache)
    n_chat, n_img, n_vid = len(chat.requests), len(images.requests), len(video.requests)
    out2, _ = _generate(world)
    assert out2["failed"] == [] and out2["recomputed"] == {}
    assert (len(chat.requests), len(images.requests), len(video.requests)) == (n_chat, n_img, n_vid)
    assert any((world / "store" / "judge_cache").rglob("*.json"))


def test_an_agent_outage_fails_the_step_with_its_reason(world, servers, monkeypatch):
    chat, images, video = servers
    chat.responder = lambda body: {"status": 503, "body": {"error": {"message": "down for maintenance"}}}
    out, _ = _generate(world)
    assert out["failed"] and out["failed"][0][0] == "entitymem_bank"
    assert "did not answer" in out["failed"][0][2] and images.requests == []


def test_a_run_stopped_by_a_backbone_outage_resumes_without_redoing_anything(world, servers):
    chat, images, video = servers
    answer, calls = video.responder, []

    def flaky(body):  # the third shot request finds the backbone down
        calls.append(1)
        return {"status": 503, "body": {"error": {"message": "backbone down"}}} if len(calls) == 3 else answer(body)
    video.responder = flaky
    out, _ = _generate(world)
    assert out["failed"] and "HTTP 503" in out["failed"][0][2]
    n_img, n_chat = len(images.requests), len(chat.requests)
    assert len(calls) == 8 - 1            # the failed arm stopped at its third shot; the other arm finished
    out2, _ = _generate(world)
    assert out2["failed"] == []
    assert out2["recomputed"] == {"shot": 2}                             # only the stopped arm's shots 3 and 4
    assert (len(images.requests), len(chat.requests)) == (n_img, n_chat)  # the bank was not redone
    assert len(video.requests) == 8 + 1                                  # every shot generated once, plus the 503


def test_backends_name_the_endpoint_when_a_reply_is_wrong(servers):
    chat, images, video = servers
    images.push({"status": 200, "body": {"data": []}})
    gen = ImageGenerator(backend="openai", base_url=images.base_url + "/v1", model="m")
    with pytest.raises(GenerationError, match="asked for 2 images, got 0"):
        gen.generate("x", 64, 64, n=2)
    images.push({"status": 500, "body": {"error": {"message": "boom"}}})
    with pytest.raises(GenerationError, match="HTTP 500"):
        gen.generate("x", 64, 64, n=1)
    # a server that answers another size is resized to the requested one, and counted
    images.push({"status": 200, "body": {"data": [copy.deepcopy(FakeImages.answer(
        {"size": "32x32", "prompt": "p", "n": 1})["body"]["data"][0])]}})
    img = gen.generate("p", 64, 48, n=1)[0]
    assert img.shape == (48, 64, 3) and gen.stats()["resized"] == 1
    video.push({"status": 200, "body": "not a video", "content_type": "video/mp4"})
    vb = VideoBackbone(backend="http", base_url=video.base_url + "/v1")
    with pytest.raises(GenerationError, match="not a video"):
        vb.generate("p", [], None, width=32, height=32, n_frames=2, fps=8)
    frames = vb.generate("p", [{"role": "keyframe", "label": "k", "image": np.zeros((32, 32, 3), np.uint8)}],
                         None, width=32, height=32, n_frames=3, fps=8)
    assert len(frames) == 3 and frames[0].shape == (32, 32, 3)


def test_a_resume_after_the_image_server_died_mid_entity_asks_only_for_the_unfinished_attempt(world, servers):
    """The Knight's green attempt completes (candidates, selection, a failed verification); the image server is
    down when his magenta retry asks for candidates. The resumed run asks for the magenta candidates only: the green
    attempt is not requested again (each attempt is its own memoised step)."""
    chat, images, video = servers
    answer = images.responder

    def dies_on_the_retry(body):
        if "Verdant Knight" in body["prompt"] and "magenta chroma-key" in body["prompt"]:
            return {"status": 503, "body": {"error": {"message": "image server gone"}}}
        return answer(body)
    images.responder = dies_on_the_retry
    out, _ = _generate(world)
    assert out["failed"] and out["failed"][0][0] == "entitymem_bank" and "HTTP 503" in out["failed"][0][2]

    def knight(key):
        return sum(1 for b in images.bodies if "Verdant Knight" in b["prompt"] and f"{key} chroma-key" in b["prompt"])
    assert (knight("green"), knight("magenta")) == (1, 1)
    images.responder = answer
    out2, resources = _generate(world)
    assert out2["failed"] == []
    assert (knight("green"), knight("magenta")) == (1, 2)      # green once in all; magenta: the 503, then the retry
    assert out2["reused"].get("attempt") == 1                  # the green attempt, from the memo
    bank = resources["store"].query("SELECT * FROM entitymem_bank")
    ref = json.loads(bank.loc[bank.name == "Verdant Knight", "reference_json"].iloc[0])
    assert [(a["chroma"], a["verdict"]) for a in ref["attempts"]] == [("green", False), ("magenta", True)]
