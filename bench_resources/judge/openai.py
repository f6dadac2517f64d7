"""The openai backend: any OpenAI-compatible ``POST {base_url}/chat/completions`` server; the schema is spelled out
in the prompt and enforced with ``response_format`` (see ``bench_resources.judge``)."""
from __future__ import annotations

import base64
import json
from typing import Any, Optional

from bench_resources.judge.common import TOOL_NAME, JudgeRequest, bounded
from bench_resources.judge.schema import structured_json
from bench_resources.judge.session import (_BadReply, _decode_body, _error_in_body, _Fatal, _Reply, _Retry, _Session,
                                           _shape)
from bench_resources.judge.transport import bounded_httpx_client


class _OpenAISession(_Session):
    def __init__(self, judge: Any, api_key: str) -> None:
        super().__init__(judge, api_key)
        self.http = bounded_httpx_client(judge.timeout_s)
        self.url = (judge.base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"

    def close(self) -> None:
        self.http.close()

    def conversation(self, req: JudgeRequest) -> "_OpenAIConversation":
        return _OpenAIConversation(self, req)


class _OpenAIConversation:
    """Chat completions: system message, then one user message with the images as ``image_url`` data URLs and the
    text with the schema spelled out (servers without guided decoding still see what to return)."""

    def __init__(self, session: _OpenAISession, req: JudgeRequest) -> None:
        self.s, self.req = session, req
        parts: list[dict] = [{"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(b).decode("ascii")}} for b in req.images]
        parts.append({"type": "text", "text": f"{req.text}\n\nAnswer with only a JSON object that satisfies this "
                                              f"JSON schema:\n{json.dumps(req.schema, sort_keys=True)}"})
        self.base = [{"role": "system", "content": req.system}, {"role": "user", "content": parts}]
        self.messages: list[dict] = list(self.base)

    def body(self) -> dict:
        j = self.s.judge
        body: dict[str, Any] = {"model": j.model, "messages": self.messages, "max_tokens": j.max_tokens}
        body.update({k: v for k, v in (("temperature", j.temperature), ("top_p", j.top_p), ("seed", j.seed))
                     if v is not None})
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
        return _read_openai(_decode_body(r.content, r.headers.get("content-type", "")),
                            self.s.judge.structured_output)

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

