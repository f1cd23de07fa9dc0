"""The LLM judge's client: one chat completion per pair, through the platform's one outbound guard.

Every request goes through `evalplatform.outbound.post`, as webhooks do: the base URL's host must resolve to
public addresses only, unless they lie in the operator's LLM_JUDGE_ALLOWED_NETWORKS (a model served inside
the network); the connection is pinned to the address checked; a redirect is never followed (it fails the
job: the base URL is wrong); the whole request has one deadline (LLM_JUDGE_TIMEOUT_SECONDS).

`ChatClient.ask` waits for its turn under the rate limit (every attempt is a request), and tries again with
exponential backoff (or the server's Retry-After, when longer, up to a minute) after a 408, 429 or 5xx, a
timeout, a connection that failed, or a body that is not the JSON of a chat completion (cut short, say),
up to `max_attempts` in all. A refused address, a redirect or another 4xx (a wrong key or model) will not
get better by asking again: `EndpointError` stops the job at once, with what the endpoint said.

Framework-free: `annotations.machine_judges.llm` builds the `ChatEndpoint` from the settings. The API key is
sent in the Authorization header and never kept anywhere else (not in errors, results or the judge).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalcore.llm_judge import RateLimit
from evalplatform import outbound

#: Bytes of an answer's body read: a chat completion of a few hundred tokens is a few kilobytes.
ANSWER_BODY_BYTES = 256 * 1024
#: The longest pause between two attempts, whatever Retry-After says.
MAX_BACKOFF_SECONDS = 60.0
RETRY_STATUSES = frozenset({408, 429}) | frozenset(range(500, 600))


class EndpointError(Exception):
    """The endpoint cannot be asked (its URL or address is refused, it redirects, it refuses the key or the
    model): asking again would not help. The message says what happened, never the key."""


@dataclass(frozen=True)
class ChatEndpoint:
    """Where and how to ask: an OpenAI-compatible base URL (`.../v1`) and model, and the request's terms."""

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)
    allowed: tuple[outbound.IPNetwork, ...] = ()
    timeout: float = 60.0
    max_attempts: int = 4
    backoff: float = 2.0
    answer_max_tokens: int = 300
    temperature: float = 0.0

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def body(self, prompt: str) -> bytes:
        return json.dumps(
            {
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": self.temperature,
                "max_tokens": self.answer_max_tokens,
            }
        ).encode()

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


@dataclass(frozen=True)
class Reply:
    """A chat completion's answer: its text (None where the model gave none), the refusal and stop reason
    it reported, the usage it counted (as sent) and how many attempts it took."""

    text: str | None
    refusal: str
    finish_reason: str
    usage: object
    attempts: int


@dataclass(frozen=True)
class NoReply:
    """No answer after every attempt: why the last one failed, and how many there were."""

    reason: str
    attempts: int


@dataclass
class ChatClient:
    endpoint: ChatEndpoint
    rate: RateLimit
    sleep: Callable[[float], None] = time.sleep

    def ask(self, prompt: str) -> Reply | NoReply:
        """The endpoint's answer to `prompt`, after retries; EndpointError when asking cannot succeed."""
        reason = ""
        for attempt in range(1, self.endpoint.max_attempts + 1):
            self.rate.wait()
            outcome = self._attempt(prompt)
            if isinstance(outcome, Reply):
                return Reply(outcome.text, outcome.refusal, outcome.finish_reason, outcome.usage, attempt)
            reason, retry_after = outcome
            if attempt < self.endpoint.max_attempts:
                self.sleep(self._pause(attempt, retry_after))
        return NoReply(reason, self.endpoint.max_attempts)

    def _attempt(self, prompt: str) -> Reply | tuple[str, float]:
        """One request: its reply, or (why it failed, the Retry-After in seconds) when worth another."""
        endpoint = self.endpoint
        try:
            answer = outbound.post(
                endpoint.url, endpoint.body(prompt), allowed=endpoint.allowed, timeout=endpoint.timeout,
                headers=endpoint.headers(), body_limit=ANSWER_BODY_BYTES,
            )  # fmt: skip
        except outbound.OutboundRefused as error:
            raise EndpointError(f"The LLM endpoint's URL is refused: {error}") from None
        except outbound.OutboundTimeout as error:
            return f"timed out after {endpoint.timeout:g} s: {error}", 0.0
        except outbound.OutboundFailed as error:
            return f"no answer: {error}", 0.0
        if 300 <= answer.status < 400:
            raise EndpointError(
                f"The LLM endpoint answered HTTP {answer.status} to {answer.location or 'nowhere'}: "
                "redirects are not followed (check LLM_JUDGE_BASE_URL)."
            )
        if answer.status in RETRY_STATUSES:
            return f"HTTP {answer.status} {answer.reason}".strip(), _seconds(answer.retry_after)
        if not 200 <= answer.status < 300:
            said = " ".join(answer.body[:300].split())
            raise EndpointError(f"The LLM endpoint refused the request: HTTP {answer.status}. {said}".strip())
        return _reply(answer.body) or ("the answer is not a chat completion (cut short, or not JSON)", 0.0)

    def _pause(self, attempt: int, retry_after: float) -> float:
        backoff = self.endpoint.backoff * 2 ** (attempt - 1)
        return min(MAX_BACKOFF_SECONDS, max(backoff, retry_after))


def _seconds(retry_after: str) -> float:
    """Retry-After in seconds (its date form is not read: the backoff applies)."""
    try:
        return max(0.0, float(retry_after))
    except ValueError:
        return 0.0


def _reply(body: str) -> Reply | None:
    """The first choice of a chat completion's JSON, or None when the body is not one."""
    try:
        data: Any = json.loads(body)
        choice = data["choices"][0]
        message = choice.get("message") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    text = message.get("content")
    refusal = message.get("refusal") or ""
    finish = choice.get("finish_reason") or ""
    return Reply(
        text if isinstance(text, str) else None,
        refusal if isinstance(refusal, str) else "",
        finish if isinstance(finish, str) else "",
        data.get("usage"),
        1,
    )
