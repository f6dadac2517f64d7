"""The anthropic backend: Anthropic's Messages API through the SDK; the answer is a forced ``record_answer`` tool
call (see ``bench_resources.judge``)."""
from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any, Optional

from bench_resources.judge.common import TOOL_NAME, JudgeRequest, bounded, json_safe
from bench_resources.judge.schema import structured_json
from bench_resources.judge.session import (_BadReply, _decode_body, _error_in_body, _Fatal, _Reply, _Retry, _Session,
                                           _shape)
from bench_resources.judge.transport import bounded_httpx2_client

if TYPE_CHECKING:
    import anthropic


class _AnthropicSession(_Session):
    def __init__(self, judge: Any, api_key: str) -> None:
        import anthropic

        super().__init__(judge, api_key)
        self.http = bounded_httpx2_client(judge.timeout_s)
        # max_retries=0: the retry loop is ours (bounded, counted, testable).
        self.client = anthropic.Anthropic(api_key=api_key, base_url=judge.base_url, max_retries=0,
                                          timeout=judge.timeout_s, http_client=self.http)

    def close(self) -> None:
        self.client.close()
        self.http.close()

    def conversation(self, req: JudgeRequest) -> "_AnthropicConversation":
        return _AnthropicConversation(self, req)


class _AnthropicConversation:
    def __init__(self, session: _AnthropicSession, req: JudgeRequest) -> None:
        self.s, self.req = session, req
        blocks: list[dict] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                            "data": base64.b64encode(b).decode("ascii")}}
                              for b in req.images]
        blocks.append({"type": "text", "text": req.text})
        self.first_turn = {"role": "user", "content": blocks}
        self.messages: list[dict] = [self.first_turn]

    def send(self) -> _Reply:
        import anthropic
        import httpx2

        j = self.s.judge
        sampling = {k: v for k, v in (("temperature", j.temperature), ("top_p", j.top_p)) if v is not None}
        try:
            raw = self.s.client.messages.with_raw_response.create(
                model=j.model, max_tokens=j.max_tokens, system=self.req.system, messages=self.messages,
                tools=[{"name": TOOL_NAME, "description": "Record your answer as a JSON object matching the schema.",
                        "input_schema": self.req.schema}],
                tool_choice={"type": "tool", "name": TOOL_NAME, "disable_parallel_tool_use": True},
                extra_body=sampling or None)
            body, ctype = raw.read(), raw.headers.get("content-type", "")
        except anthropic.APIStatusError as e:
            code = e.status_code
            if code != 429 and code < 500:
                raise _Fatal(f"HTTP {code}: {_error_message(e)}") from None
            raise _Retry(f"HTTP {code}", j._retry_after(e.response.headers), transport=code != 429) from None
        except (anthropic.APITimeoutError, httpx2.TimeoutException):  # before connection errors: a subclass
            raise _Retry("timeout") from None
        except (anthropic.APIConnectionError, httpx2.TransportError):
            raise _Retry("connection error") from None
        except anthropic.APIError as e:  # e.g. a response the SDK could not read
            raise _BadReply(f"{type(e).__name__}: {e}") from None
        return _read_anthropic(_decode_body(body, ctype))

    def correct(self, reply: Optional[_Reply], problem: str) -> None:
        echo = reply.echo if reply is not None else None
        self.messages = [self.first_turn, *_correction(echo or [], reply.tool_id if reply else None, problem)]



def _read_anthropic(body: Any) -> _Reply:
    if not isinstance(body, dict):
        raise _BadReply(f"JSON {_shape(body)}, not a message object")
    if body.get("type") == "error" and (problem := _error_in_body(body)):
        raise _BadReply(problem)
    content = body.get("content")
    if not isinstance(content, list):
        raise _BadReply(f"no content list (content: {_shape(content)})")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    stop = body.get("stop_reason")
    if stop == "refusal":
        return _Reply(refused="refused", usage=usage, model=model)
    answer: Optional[dict] = None
    tool_id: Optional[str] = None
    texts: list[str] = []
    echo: list[dict] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use" and block.get("name") == TOOL_NAME and answer is None and tool_id is None:
            value = block.get("input")
            if isinstance(value, str):  # some gateways pass the arguments through as a string: the whole of it
                value, _ = structured_json(value)
            answer = value if isinstance(value, dict) else None
            if isinstance(block.get("id"), str):
                tool_id = block["id"]
                # json_safe: a NaN in the answer is shown back as "NaN" (the SDK's encoder refuses NaN)
                echo.append({"type": "tool_use", "id": tool_id, "name": TOOL_NAME,
                             "input": json_safe(answer) if answer is not None else {}})
        elif kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            texts.append(block["text"])
            echo.append({"type": "text", "text": block["text"]})
    text = "\n".join(texts) if texts else None
    problem = None
    if answer is None:  # text is never read for an answer: a refusal showing an example answer would be scored
        problem = (f"no {TOOL_NAME} tool call in the reply"
                   + (f" (text reply: {json.dumps(bounded(text))})" if text else ""))
    return _Reply(answer=answer, text=text, truncated=stop == "max_tokens", usage=usage, model=model, echo=echo,
                  tool_id=tool_id, problem=problem)



def _error_message(e: "anthropic.APIStatusError") -> str:
    body = e.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and body["error"].get("message"):
        return str(body["error"]["message"])
    return str(e.message)


def _correction(echo: list[dict], tool_id: Optional[str], problem: str) -> list[dict]:
    """The follow-up turns of a re-ask: the bad reply, then what was wrong with it."""
    note = (f"The answer could not be used: {problem}. "
            f"Call the {TOOL_NAME} tool again with a JSON object that satisfies its input schema.")
    if not echo:
        return []  # nothing to show back: a plain resend
    if tool_id is not None:
        feedback = [{"type": "tool_result", "tool_use_id": tool_id, "is_error": True, "content": note}]
    else:
        feedback = [{"type": "text", "text": note}]
    return [{"role": "assistant", "content": echo}, {"role": "user", "content": feedback}]
