"""OpenAIBackend against a local stand-in for a vLLM completions server."""

from __future__ import annotations

import json
import math
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rlguard.judges.llm import LLMJudge, OpenAIBackend
from rlguard.judges.llm.openai_backend import label_probability

GOOD = {" Yes": math.log(0.8), " No": math.log(0.1), " Maybe": math.log(0.05)}
BAD = {" No": math.log(0.7), " Yes": math.log(0.3)}
NEITHER = {" Maybe": math.log(0.6), " Perhaps": math.log(0.3)}


class FakeServer:
    """Answers each prompt with the top-logprobs map named by a marker in its completion."""

    def __init__(self):
        self.requests: list[tuple[dict, dict]] = []
        self.statuses: list[int] = []  # returned (with no body) before answering normally

    def respond(self, body):
        choices = []
        for i, prompt in enumerate(body["prompt"]):
            top = GOOD if "GOOD" in prompt else BAD if "BAD" in prompt else NEITHER
            token = max(top, key=top.get)
            logprobs = {"tokens": [token], "token_logprobs": [top[token]], "top_logprobs": [top]}
            choices.append({"index": i, "text": token, "logprobs": logprobs})
        return {"object": "text_completion", "choices": choices[::-1]}  # order by index only


@pytest.fixture
def server(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append((body, dict(self.headers)))
            if state.statuses:
                self.send_response(state.statuses.pop(0))
                self.end_headers()
                return
            payload = json.dumps(state.respond(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield state
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def _backend(url, **kwargs):
    kwargs = {"api_key_env": None, "backoff_s": 0.0, "timeout_s": 5.0, **kwargs}
    return OpenAIBackend(url, "judge-model", **kwargs)


def test_verdicts_and_request_fields(server):
    judge = LLMJudge.from_template("safety", _backend(server.url))
    verdicts = judge.evaluate(["p1", "p2", "p3"], ["GOOD", "BAD", "GOOD again"], [{}] * 3)
    assert [v.value for v in verdicts] == [1, 0, 1]
    assert verdicts[0].reason == f"p(yes)={0.8 / 0.9:.3g}"
    assert verdicts[1].reason == "p(yes)=0.3"
    ((body, headers),) = server.requests
    assert body["model"] == "judge-model"
    fields = {k: body[k] for k in ("max_tokens", "logprobs", "temperature", "echo")}
    assert fields == {"max_tokens": 1, "logprobs": 20, "temperature": 0, "echo": False}
    sent = [p.split("[Response]\n")[1].split("\n")[1] for p in body["prompt"]]
    assert sent == ["GOOD", "BAD", "GOOD again"]
    assert body["prompt"][0].endswith("Answer:")
    assert "Authorization" not in headers


def test_prompts_are_sent_in_chunks_in_order(server):
    completions = ["GOOD", "BAD", "BAD", "GOOD", "GOOD"]
    judge = LLMJudge.from_template("false_refusal", _backend(server.url, batch_size=2))
    assert judge.judge(["p"] * 5, completions, [{}] * 5) == [1, 0, 0, 1, 1]
    assert [len(body["prompt"]) for body, _ in server.requests] == [2, 2, 1]


def test_server_error_is_retried(server):
    server.statuses = [500, 503]
    judge = LLMJudge.from_template("safety", _backend(server.url, max_retries=2))
    assert judge.judge(["p", "q"], ["GOOD", "BAD"], [{}, {}]) == [1, 0]
    assert len(server.requests) == 3


def test_retries_run_out_or_client_errors_fail_every_sample(server):
    server.statuses = [500, 500]
    verdicts = LLMJudge.from_template("safety", _backend(server.url, max_retries=1)).evaluate(
        ["p", "q"], ["GOOD", "BAD"], [{}, {}]
    )
    assert [v.value for v in verdicts] == [-1, -1]
    assert "2 attempts" in verdicts[0].reason and "500" in verdicts[0].reason
    server.requests.clear()
    server.statuses = [400]
    verdicts = LLMJudge.from_template("safety", _backend(server.url, max_retries=3)).evaluate(
        ["p"], ["GOOD"], [{}]
    )
    assert verdicts[0].value == -1 and "HTTP 400" in verdicts[0].reason
    assert len(server.requests) == 1  # a bad request is not retried


def test_unreachable_endpoint_fails_every_sample_without_raising(monkeypatch):
    monkeypatch.setenv("RLGUARD_TEST_KEY", "sk-secret")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    backend = _backend(f"http://127.0.0.1:{port}/v1", max_retries=1, api_key_env="RLGUARD_TEST_KEY")
    verdicts = LLMJudge.from_template("safety", backend).evaluate(["p", "q"], ["c", "d"], [{}, {}])
    assert [v.value for v in verdicts] == [-1, -1]
    assert "failed after 2 attempts" in verdicts[0].reason
    assert "sk-secret" not in verdicts[0].reason + repr(vars(backend))


def test_neither_label_in_top_logprobs_fails_that_sample(server):
    verdicts = LLMJudge.from_template("safety", _backend(server.url)).evaluate(
        ["p", "q"], ["unsure", "GOOD"], [{}, {}]
    )
    assert [v.value for v in verdicts] == [-1, 1]
    assert "top tokens" in verdicts[0].reason


def test_missing_ground_truth_fails_without_a_request(server):
    judge = LLMJudge.from_template("factuality", _backend(server.url))
    verdicts = judge.evaluate(["q1", "q2"], ["GOOD", "GOOD"], [{"answer": "42"}, {}])
    assert [v.value for v in verdicts] == [1, -1]
    assert "answer" in verdicts[1].reason
    assert len(server.requests[0][0]["prompt"]) == 1
    assert judge.judge(["q"], ["GOOD"], [{"answer": None}]) == [-1]
    assert len(server.requests) == 1


def test_api_key_comes_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("RLGUARD_TEST_KEY", "sk-secret")
    backend = _backend(server.url, api_key_env="RLGUARD_TEST_KEY")
    assert backend.positive_probability(["GOOD"], " Yes", " No") == [pytest.approx(0.8 / 0.9)]
    assert server.requests[0][1]["Authorization"] == "Bearer sk-secret"


def test_label_variants_are_summed_and_a_missing_label_counts_as_zero():
    top = {" Yes": math.log(0.3), "yes": math.log(0.1), "YES ": math.log(0.1), " No": math.log(0.5)}
    assert label_probability(top, " Yes", " No") == pytest.approx(0.5 / 1.0)
    assert label_probability({"Yes": -0.1, " Maybe": -3.0}, " Yes", " No") == 1.0
    assert label_probability({"\nno": -0.1}, " Yes", " No") == 0.0
    assert label_probability({" Maybe": -0.1}, " Yes", " No") is None
    assert label_probability(None, " Yes", " No") is None
