"""The openai backend: any OpenAI-compatible ``POST {base_url}/chat/completions`` server; the schema is spelled out
in the prompt and enforced with ``response_format`` (see ``bench_resources.judge``)."""
from __future__ import annotations

import base64
import json
import re
from typing import Any, Optional
from urllib.parse import quote

from bench_resources.judge.common import TOOL_NAME, JudgeRequest, Wire, bounded
from bench_resources.judge.schema import structured_json
from bench_resources.judge.session import (_BadReply, _decode_body, _error_in_body, _Fatal, _Reply, _Retry, _Session,
                                           _shape)
from bench_resources.judge.transport import bounded_httpx_client

_OWN = Wire("own")  # the defaults: the judge's own wire


class _OpenAISession(_Session):
    def __init__(self, judge: Any, api_key: str) -> None:
        super().__init__(judge, api_key)
        self.http = bounded_httpx_client(judge.timeout_s)
        base = (judge.base_url or "https://api.openai.com/v1").rstrip("/")
        if judge.azure_api_version:  # Azure OpenAI's layout, as openai.AzureOpenAI posts it
            self.url = (f"{base}/openai/deployments/{quote(judge.model, safe='')}/chat/completions"
                        f"?api-version={quote(judge.azure_api_version, safe='')}")
        else:
            self.url = base + "/chat/completions"

    def close(self) -> None:
        self.http.close()

    def conversation(self, req: JudgeRequest) -> "_OpenAIConversation":
        return _OpenAIConversation(self, req)


class _OpenAIConversation:
    """Chat completions: system message, then one user message with the images as ``image_url`` data URLs and the
    text with the schema spelled out (servers without guided decoding still see what to return). A request's
    ``wire`` (common.Wire) changes each of these as it says."""

    def __init__(self, session: _OpenAISession, req: JudgeRequest) -> None:
        self.s, self.req = session, req
        self.wire = w = req.wire or _OWN
        images: list[dict] = [{"type": "image_url", "image_url": {
            "url": f"data:{w.image_mime};base64," + base64.b64encode(b).decode("ascii")}} for b in req.images]
        text = req.text
        if w.schema_in_text:
            text = (f"{text}\n\nAnswer with only a JSON object that satisfies this JSON schema:\n"
                    f"{json.dumps(req.schema, sort_keys=True)}")
        parts = [{"type": "text", "text": text}, *images] if w.text_first else [*images, {"type": "text", "text": text}]
        self.base = ([{"role": "system", "content": req.system}] if w.system_message else []) + \
            [{"role": "user", "content": parts}]
        self.messages: list[dict] = list(self.base)

    def body(self) -> dict:
        j, w = self.s.judge, self.wire
        body: dict[str, Any] = {"model": j.model, "messages": self.messages,
                                "max_tokens": w.max_tokens if w.max_tokens is not None else j.max_tokens}
        if w.sampling:
            body.update({k: v for k, v in (("temperature", j.temperature), ("top_p", j.top_p), ("seed", j.seed))
                         if v is not None})
        if not w.response_format:
            return body
        if j.structured_output == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": TOOL_NAME, "schema": self.req.schema}}
        elif j.structured_output == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def send(self) -> _Reply:
        import httpx

        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.s.api_key:
            if self.s.judge.azure_api_version:  # Azure's key header, as openai.AzureOpenAI sends it
                headers["api-key"] = self.s.api_key
            else:
                headers["authorization"] = f"Bearer {self.s.api_key}"
        try:
            r = self.s.http.post(self.s.url, json=self.body(), headers=headers)
        except httpx.TimeoutException:
            raise _Retry("timeout") from None
        except httpx.TransportError:  # refused, reset, closed mid-body
            raise _Retry("connection error") from None
        code = r.status_code
        if code == 429 or code >= 500:
            raise _Retry(f"HTTP {code}", self.s.judge._retry_after(r.headers), transport=code != 429)
        if code >= 300:
            raise _Fatal(f"HTTP {code}: {_openai_error(r.content)}")
        body = _decode_body(r.content, r.headers.get("content-type", ""))
        if self.wire.reader == "first_object":
            return _read_first_object(body)
        return _read_openai(body, self.s.judge.structured_output)

    def correct(self, reply: Optional[_Reply], problem: str) -> None:
        if reply is None or not reply.text:
            self.messages = list(self.base)  # nothing to show back: a plain resend
            return
        self.messages = [*self.base, {"role": "assistant", "content": reply.text},
                         {"role": "user", "content": f"The answer could not be used: {problem}. Answer again with "
                                                     "only a JSON object that satisfies the schema."}]


def _read_openai(body: Any, structured_output: str = "json_schema") -> _Reply:
    if not isinstance(body, dict):
        raise _BadReply(f"JSON {_shape(body)}, not a chat completion")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _BadReply(_error_in_body(body) or f"no choices (choices: {_shape(choices)})")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _BadReply(f"choice without a message ({_shape(choice)})")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    finish = choice.get("finish_reason")
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        return _Reply(refused=f"refused: {bounded(message['refusal'])}", usage=usage, model=model)
    if finish == "content_filter":
        return _Reply(refused="refused (content_filter)", usage=usage, model=model)
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    text = content if isinstance(content, str) and content else None
    answer: Optional[dict] = None
    problem: Optional[str] = None
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        args = fn.get("arguments") if isinstance(fn, dict) else None
        value = structured_json(args)[0] if isinstance(args, str) else args
        if isinstance(value, dict):
            answer = value
            break
    if answer is None and text is not None:
        # the content as a whole is the answer (what response_format constrains); never a JSON object in prose
        value, problem = structured_json(text, allow_fence=structured_output == "prompt")
        if value is not None and not isinstance(value, dict):
            value, problem = None, f"JSON {_shape(value)} is not an object"
        answer = value
    elif answer is None:
        problem = "no JSON object in the reply (no content)"
    return _Reply(answer=answer, text=text, truncated=finish == "length", usage=usage, model=model,
                  problem=problem)


_FIRST_OBJECT = re.compile(r'\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}')


def _read_first_object(body: Any) -> _Reply:
    """``Wire(reader="first_object")``: the message content (``""`` when absent), stripped; its first ``{...}`` with
    at most one level of nested braces parsed as JSON; with no such match, the content without a leading / trailing
    code fence. A match that is not JSON is unusable (the fence is not tried then). Tool calls are not read."""
    reply = _read_openai(body)   # shape checks, refusal, content_filter, usage, truncation
    if reply.refused is not None:
        return reply
    raw = (reply.text or "").strip()
    reply.answer, reply.problem = None, None
    if not raw:
        reply.problem = "no content in the reply"
        return reply
    m = _FIRST_OBJECT.search(raw)
    chunk = m.group() if m else re.sub(r"\s*```$", "", re.sub(r"^```(?:json)?\s*", "", raw))
    try:
        value = json.loads(chunk)
    except ValueError:
        reply.problem = f"no JSON object in the reply (text reply: {json.dumps(bounded(raw))})"
        return reply
    if isinstance(value, dict):
        reply.answer = value
    else:
        reply.problem = f"JSON {_shape(value)} is not an object"
    return reply


def _openai_error(body: bytes) -> str:
    try:
        parsed = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        return body.decode("utf-8", errors="replace")[:200] or "no body"
    if isinstance(parsed, dict):
        err = parsed.get("error", parsed.get("detail", parsed.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:200]
    return str(parsed)[:200]

