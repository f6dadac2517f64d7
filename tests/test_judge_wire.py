"""A request's ``wire`` (bench_resources.judge.Wire): another program's judge requests reproduced exactly by the
openai backend, per request, against a real chat-completions server on 127.0.0.1; the judge's own wire unchanged
without one; the anthropic backend refuses one in words; Azure OpenAI's URL layout and key header."""
import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from bench_resources.judge import Judge, JudgeRequest, Wire, jpeg_bytes, png_bytes
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI, chat_answer, chat_text, completion

SCHEMA = {"type": "object", "required": ["score", "same"],
          "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10}, "same": {"type": "boolean"},
                         "reason": {"type": "string"}}}
THEIRS = Wire("theirs-v1", text_first=True, system_message=False, schema_in_text=False, response_format=False,
              max_tokens=50000, sampling=False, image_mime="image/jpeg", reader="first_object", reask=False)


def frame(v: int) -> np.ndarray:
    rng = np.random.default_rng(v)
    return rng.integers(0, 256, (12, 20, 3), dtype=np.uint8)


def request(wire=None, n_images: int = 2, text: str = "Are these the same?") -> JudgeRequest:
    enc = (lambda a: jpeg_bytes(a, 90)) if wire is not None else png_bytes
    return JudgeRequest("pair", "v1", "" if wire is not None else "You compare.", text, SCHEMA,
                        tuple(enc(frame(i)) for i in range(n_images)), wire=wire)


@pytest.fixture
def judge_for(tmp_path, monkeypatch):
    monkeypatch.setenv("WIRE_KEY", "k-123")

    def make(server, **kw) -> Judge:
        cfg = dict(mode="live", backend="openai", base_url=server.base_url + "/v1", model="gemini-2.5-pro",
                   api_key_env="WIRE_KEY", cache_dir=str(tmp_path / "cache"), backoff_s=0.01, max_retries=1,
                   timeout_s=2.0, parse_retries=1, temperature=0.2, seed=7)
        cfg.update(kw)
        return Judge(**cfg)
    return make


def test_wire_body_is_exactly_what_it_says(judge_for):
    """One user message, text first, JPEG data URLs, its max_tokens, no sampling, no response_format, no schema
    note: nothing else in the body."""
    with FakeOpenAI([chat_answer({"score": 7, "same": True})]) as srv:
        res = judge_for(srv).ask(request(THEIRS))
        assert (res.status, res.answer) == ("ok", {"score": 7, "same": True})
        body = srv.requests[0]["body"]
    urls = [f"data:image/jpeg;base64,{base64.b64encode(jpeg_bytes(frame(i), 90)).decode()}" for i in range(2)]
    assert body == {"model": "gemini-2.5-pro", "max_tokens": 50000, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "Are these the same?"},
        *({"type": "image_url", "image_url": {"url": u}} for u in urls)]}]}
    sent = Image.open(io.BytesIO(base64.b64decode(urls[1].split(",", 1)[1])))
    assert sent.format == "JPEG" and sent.size == (20, 12)


def test_without_a_wire_the_judges_own_wire_is_unchanged(judge_for):
    with FakeOpenAI([chat_answer({"score": 7, "same": True})]) as srv:
        assert judge_for(srv).ask(request()).status == "ok"
        body = srv.requests[0]["body"]
    assert body["messages"][0] == {"role": "system", "content": "You compare."}
    assert [p["type"] for p in body["messages"][1]["content"]] == ["image_url", "image_url", "text"]
    assert body["messages"][1]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "JSON schema" in body["messages"][1]["content"][2]["text"]
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.2, 7, 1024)
    assert body["response_format"]["type"] == "json_schema"


@pytest.mark.parametrize("content, answer", [
    ('Sure. {"score": 4, "same": false, "reason": "the coat {red} differs"} Hope that helps.',
     {"score": 4, "same": False, "reason": "the coat {red} differs"}),
    ('```json\n{"score": 9, "same": true}\n```', {"score": 9, "same": True}),
    ('{"score": 3, "same": true} and then {"score": 8, "same": false}', {"score": 3, "same": True}),
])
def test_first_object_reader_takes_the_first_json_object(judge_for, content, answer):
    """Read as the authors' _vlm_api_call reads (tests/parity/test_entitybench_wire.py runs their function on the
    same replies); the own wire refuses prose around JSON."""
    with FakeOpenAI([chat_text(content)]) as srv:
        res = judge_for(srv).ask(request(THEIRS))
        assert (res.status, res.answer, len(srv.requests)) == ("ok", answer, 1)
    with FakeOpenAI([chat_text(content), chat_text(content)]) as srv:   # the own wire: the content as a whole
        own = judge_for(srv).ask(request())
        assert own.status == "failed" and "not a JSON answer" in own.reason and len(srv.requests) == 2


@pytest.mark.parametrize("step, why", [
    (chat_text('{"score": 4, "same": maybe}'), "no JSON object in the reply"),
    (chat_text("I cannot judge these images."), "no JSON object in the reply"),
    (chat_text('{"score": 4}'), "missing required field answer.same"),
    (chat_text('{"score": 40, "same": true}'), "above maximum 10"),
    (completion(None, tool_calls=[{"id": "c", "type": "function",
                                   "function": {"name": "record_answer",
                                                "arguments": '{"score": 4, "same": true}'}}]),
     "no content in the reply"),
])
def test_an_unusable_answer_fails_at_once_without_a_reask(judge_for, step, why):
    """Their client never re-asks: one request, an evaluator failure with the reason, never a default value (their
    code would read a missing 'same' as false); tool calls are not read."""
    with FakeOpenAI([step, chat_answer({"score": 5, "same": True})]) as srv:
        res = judge_for(srv).ask(request(THEIRS))
        assert res.status == "failed" and why in res.reason and res.answer is None
        assert len(srv.requests) == 1


def test_the_wire_is_part_of_the_cache_key(tmp_path):
    j = Judge(mode="off", backend="openai", cache_dir=str(tmp_path))
    plain = request(None)
    keys = {j.cache_key(plain), j.cache_key(JudgeRequest(**{**plain.__dict__, "wire": THEIRS})),
            j.cache_key(JudgeRequest(**{**plain.__dict__, "wire": Wire("theirs-v1", max_tokens=4096)}))}
    assert len(keys) == 3
    assert j.cache_key(plain) == j.cache_key(JudgeRequest(**{**plain.__dict__}))


def test_anthropic_backend_refuses_a_wire_in_words(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    with FakeAnthropic() as srv:
        j = Judge(mode="live", backend="anthropic", base_url=srv.base_url, cache_dir=str(tmp_path), max_retries=0)
        res = j.ask(request(THEIRS))
        assert res.status == "failed" and len(srv.requests) == 0
        assert res.reason == ("judge backend anthropic cannot send wire 'theirs-v1': it reproduces an OpenAI "
                              "chat-completions client; use backend openai")


class FakeAzure(FakeOpenAI):
    PATH = "/chat/completions"


def test_azure_layout_url_and_key_header(judge_for):
    with FakeAzure([chat_answer({"score": 2, "same": False})]) as srv:
        j = judge_for(srv, base_url=srv.base_url, azure_api_version="2023-07-01-preview")
        assert j.ask(request(THEIRS)).status == "ok"
        sent = srv.requests[0]
    assert sent["path"] == "/openai/deployments/gemini-2.5-pro/chat/completions?api-version=2023-07-01-preview"
    assert sent["headers"]["api-key"] == "k-123" and "authorization" not in sent["headers"]
    assert j.identity()["azure_api_version"] == "2023-07-01-preview"
    assert "azure_api_version" not in Judge(mode="live", backend="openai").identity()
    assert json.dumps(sent["body"]).count("image/jpeg") == 2


def test_entitybench_authors_set_sends_the_authors_wire_and_paper_its_own(tmp_path, monkeypatch):
    """EntityBench's judge_prompts: authors (a stand-in clone in their code shape) builds every request on
    AUTHORS_WIRE with JPEG quality 90 images; the paper default stays on the judge's own wire with PNG. The heavy
    tests/parity/test_entitybench_wire.py compares the authors' wire with their real client's requests."""
    from bench_assets.entitybench import judging as J
    from tests.support.entitybench_authors_code import write_clone
    im = frame(3)
    build = (lambda: [J.fidelity_request("object", "Cup", "a red cup", im),
                      J.identity_request("character", "Mia", "a girl", im, frame(4)),
                      J.action_request(im, "Mia waves", {"Mia": "a girl"}, names_object=False, n_frames=5),
                      J.location_set_request("Kitchen", "a kitchen", [[im], [frame(4)]], ["1:1", "1:2"])[0]])
    monkeypatch.delenv(J.PROMPTS_ENV, raising=False)
    for req in build():
        assert req.wire is None and all(b.startswith(b"\x89PNG") for b in req.images), req.prompt_id
    write_clone(tmp_path / "clone")
    monkeypatch.setenv(J.PROMPTS_ENV, "authors")
    monkeypatch.setenv(J.AUTHORS_CODE_ENV, str(tmp_path / "clone"))
    for req in build():
        assert req.wire is J.AUTHORS_WIRE and req.system == "", req.prompt_id
        assert list(req.images) == [jpeg_bytes(a, J.AUTHORS_JPEG_QUALITY) for a in
                                    {"entitybench.identity.character": [im, frame(4)],
                                     "entitybench.location_set": [im, frame(4)]}.get(req.prompt_id, [im])]
    assert J.prompt_set_id().endswith("/" + J.wire_id())
