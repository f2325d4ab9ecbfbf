#!/usr/bin/python3
"""A stand-in for an inference engine's HTTP API, for testing hintstream's
adapter where no GPU can run the real one.

It validates each request against the engine's request schema as read from
its source, and rejects what the real engine would reject (and, where the
real engine only logs a bad kv_hints action, rejects that too, so a test
sees it):

  --engine sglang  POST /generate: SGLang's GenerateReqInput
      (python/sglang/srt/managers/io_struct.py @ 001067fffe33427bee0ed2f007fb7551a1d76b44):
      exactly one of text / input_ids / input_embeds; input_ids a non-empty
      list of int (or of lists of int); sampling_params a dict expanded into
      SamplingParams(**...), so an unknown key is an error; priority an int;
      cache_salt and extra_key a str (or a list of str). Unknown top-level fields are ignored, as a pydantic dataclass does;
      they are recorded.
  --engine vllm    POST /v1/completions: vLLM's CompletionRequest
      (vllm/entrypoints/openai/completion/protocol.py @ d5dba2d7b0ab9b98096560c69db7126b54b14d79,
      the same fields @ 002032ee2b18e1f7bd924ec47b62504ba3866063):
      model must name the served model (404 otherwise; 400 when missing, as
      releases where model is required do); prompt a list of int >= 0 (or
      str / list of str / list of lists); max_tokens an int >= 1; priority an
      int, and not 0 only with --priority-scheduling; cache_salt a str or
      null. extra="allow": unknown
      fields are accepted and recorded. kv_hints: a KvHintsEnvelope
      (vllm/v1/kv_hints/protocol.py @ 01a37bc09a949a6a516afd924ad10e60c56f35f3)
      whose vllm.set_priority@1.0 payload follows SetPriority
      (vllm/v1/kv_hints/actions.py @ ffeb400564cafb694280912a1d54a9a676295fb1:
      forbid_unknown_fields, strict).

Faults: --delay-ms (a slow engine), --status (answer every generation call
with that status). GET /_standin/stats returns what was accepted and
rejected, and the most calls seen at once. GET /health answers 200.

Standard library only (http.server, json).
"""

import argparse
import json
import math
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SGLANG_FIELDS = {
    "rid", "session_id", "text", "input_ids", "input_embeds", "image_data", "video_data", "audio_data",
    "sampling_params", "return_logprob", "logprob_start_len", "top_logprobs_num", "token_ids_logprob",
    "return_text_in_logprobs", "stream", "log_metrics", "return_hidden_states", "modalities",
    "session_params", "lora_path", "lora_id", "custom_logit_processor", "bootstrap_host",
    "bootstrap_port", "bootstrap_room", "routed_dp_rank", "data_parallel_rank", "priority",
    "extra_key", "no_logs", "custom_labels", "return_bytes", "return_entropy", "cache_salt",
    "routing_key", "conversation_id", "kv_router_hint",
}
# SamplingParams.__init__ keywords (python/sglang/srt/sampling/sampling_params.py).
SGLANG_SAMPLING = {
    "max_new_tokens", "stop", "stop_token_ids", "stop_regex", "temperature", "top_p", "top_k", "min_p",
    "frequency_penalty", "presence_penalty", "repetition_penalty", "min_new_tokens", "n", "json_schema",
    "regex", "ebnf", "structural_tag", "ignore_eos", "skip_special_tokens", "spaces_between_special_tokens",
    "no_stop_trim", "custom_params", "stream_interval", "logit_bias", "sampling_seed",
}
VLLM_FIELDS = {
    "model", "prompt", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p",
    "user", "use_beam_search", "top_k", "min_p", "repetition_penalty", "length_penalty",
    "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens", "skip_special_tokens",
    "spaces_between_special_tokens", "truncate_prompt_tokens", "allowed_token_ids", "prompt_logprobs",
    "bad_words", "prompt_embeds", "add_special_tokens", "response_format", "structured_outputs",
    "priority", "request_id", "session_id", "return_tokens_as_token_ids", "return_token_ids",
    "cache_salt", "kv_transfer_params", "vllm_xargs", "kv_hints",
}
SET_PRIORITY_FIELDS = {"target", "location", "claim_id", "revision", "value", "ttl_seconds"}


class Invalid(Exception):
    def __init__(self, status, msg):
        super().__init__(msg)
        self.status = status


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_token_list(v, where, allow_nested=True):
    if not isinstance(v, list) or not v:
        raise Invalid(400, f"{where}: expected a non-empty list of int")
    if allow_nested and isinstance(v[0], list):
        for i, row in enumerate(v):
            check_token_list(row, f"{where}[{i}]", allow_nested=False)
        return
    for i, t in enumerate(v):
        if not is_int(t) or t < 0:
            raise Invalid(400, f"{where}[{i}]: expected int >= 0, got {t!r}")


def check_sglang(body, args):
    ignored = sorted(set(body) - SGLANG_FIELDS)
    given = [k for k in ("text", "input_ids", "input_embeds") if body.get(k) is not None]
    if len(given) != 1:
        raise Invalid(400, "Either text, input_ids or input_embeds should be provided.")
    if "input_ids" in given:
        check_token_list(body["input_ids"], "input_ids")
    if "text" in given and not isinstance(body["text"], (str, list)):
        raise Invalid(400, "text: expected str or list of str")
    sp = body.get("sampling_params")
    if sp is not None:
        if not isinstance(sp, dict):
            raise Invalid(400, "sampling_params: expected a dict")
        unknown = sorted(set(sp) - SGLANG_SAMPLING)
        if unknown:
            raise Invalid(400, f"SamplingParams.__init__() got an unexpected keyword argument {unknown[0]!r}")
        mnt = sp.get("max_new_tokens")
        if mnt is not None and (not is_int(mnt) or mnt < 0):
            raise Invalid(400, "max_new_tokens must be at least 0")
    pr = body.get("priority")
    if pr is not None and not is_int(pr):
        raise Invalid(400, "priority: expected int")
    for k in ("cache_salt", "extra_key"):
        v = body.get(k)
        if v is not None and not isinstance(v, str) and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            raise Invalid(400, f"{k}: expected str or list of str")
    if body.get("stream") not in (None, False, True):
        raise Invalid(400, "stream: expected bool")
    return ignored


def check_kv_hints(env):
    if not isinstance(env, dict):
        raise Invalid(400, "kv_hints: expected an object")
    for k in ("protocol_version", "message_id", "actions"):
        if k not in env:
            raise Invalid(400, f"kv_hints: Object missing required field `{k}`")
    if not isinstance(env["protocol_version"], str) or not isinstance(env["message_id"], str):
        raise Invalid(400, "kv_hints: protocol_version and message_id must be str")
    if not isinstance(env["actions"], list):
        raise Invalid(400, "kv_hints.actions: expected array")
    for i, a in enumerate(env["actions"]):
        at = f"kv_hints.actions[{i}]"
        if not isinstance(a, dict):
            raise Invalid(400, f"{at}: expected object")
        for k in ("action_id", "action_type", "action_version"):
            if not isinstance(a.get(k), str):
                raise Invalid(400, f"{at}.{k}: expected str")
        if not isinstance(a.get("payload"), dict):
            raise Invalid(400, f"{at}.payload: expected object")
        if a["action_type"] == "vllm.set_priority" and a["action_version"] == "1.0":
            check_set_priority(a["payload"], at + ".payload")


def check_set_priority(p, at):
    unknown = sorted(set(p) - SET_PRIORITY_FIELDS)
    if unknown:
        raise Invalid(400, f"{at}: Object contains unknown field `{unknown[0]}`")
    for k in ("target", "location", "claim_id", "revision", "value"):
        if k not in p:
            raise Invalid(400, f"{at}: Object missing required field `{k}`")
    if p["target"] != "request_cached":
        raise Invalid(400, f"{at}.target: Invalid enum value {p['target']!r}")
    if p["location"] != "local_g1":
        raise Invalid(400, f"{at}.location: Invalid enum value {p['location']!r}")
    cid = p["claim_id"]
    if not isinstance(cid, str) or not 1 <= len(cid) <= 256:
        raise Invalid(400, f"{at}.claim_id: Expected `str` of length 1..256")
    if not is_int(p["revision"]) or p["revision"] < 0:
        raise Invalid(400, f"{at}.revision: Expected `int` >= 0")
    v = p["value"]
    if v is not None and not is_int(v):
        raise Invalid(400, f"{at}.value: Expected `int | null`")
    ttl = p.get("ttl_seconds")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float))):
        raise Invalid(400, f"{at}.ttl_seconds: Expected `float | null`")
    if v is None:
        if ttl is not None:
            raise Invalid(400, f"{at}: Clearing a claim must omit ttl_seconds")
    elif ttl is None or not math.isfinite(ttl) or ttl <= 0:
        raise Invalid(400, f"{at}: Setting a priority requires a finite positive TTL")


def check_vllm(body, args):
    ignored = sorted(set(body) - VLLM_FIELDS)
    model = body.get("model")
    if model is None:
        raise Invalid(400, "model: Field required")
    if not isinstance(model, str):
        raise Invalid(400, "model: Input should be a valid string")
    if model != args.model:
        raise Invalid(404, f"The model `{model}` does not exist.")
    prompt = body.get("prompt")
    if prompt is None:
        raise Invalid(400, "Either prompt or prompt_embeds must be provided and non-empty.")
    if isinstance(prompt, list) and prompt and not isinstance(prompt[0], str):
        check_token_list(prompt, "prompt")
    elif not isinstance(prompt, (str, list)):
        raise Invalid(400, "prompt: expected list of int, str or list of str")
    mt = body.get("max_tokens", 16)
    if mt is not None and (not is_int(mt) or mt < 1):
        raise Invalid(400, "max_tokens must be at least 1")
    pr = body.get("priority", 0)
    if not is_int(pr):
        raise Invalid(400, "priority: Input should be a valid integer")
    if pr != 0 and not args.priority_scheduling:
        raise Invalid(400, "Priority scheduling is not enabled.")
    salt = body.get("cache_salt")
    if salt is not None and not isinstance(salt, str):
        raise Invalid(400, "cache_salt: Input should be a valid string")
    if "kv_hints" in body and body["kv_hints"] is not None:
        check_kv_hints(body["kv_hints"])
    return ignored


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.accepted = []
        self.rejected = []
        self.inflight = 0
        self.max_inflight = 0


def make_handler(args, state):
    path = "/generate" if args.engine == "sglang" else "/v1/completions"
    check = check_sglang if args.engine == "sglang" else check_vllm

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Headers and body leave in separate writes: without this the
            # client's delayed ACK adds ~40 ms to every call, which no real
            # engine server (uvicorn) has.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, fmt, *a):
            if args.verbose:
                sys.stderr.write("standin: " + (fmt % a) + "\n")

        def reply(self, status, obj):
            b = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {})
            elif self.path == "/_standin/stats":
                with state.lock:
                    self.reply(200, {"accepted": state.accepted, "rejected": state.rejected,
                                     "max_inflight": state.max_inflight})
            else:
                self.reply(404, {"detail": "Not Found"})

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n)
            if self.path != path:
                self.reply(404, {"detail": "Not Found"})
                return
            with state.lock:
                state.inflight += 1
                state.max_inflight = max(state.max_inflight, state.inflight)
            try:
                self.generate(raw)
            finally:
                with state.lock:
                    state.inflight -= 1

        def generate(self, raw):
            if args.delay_ms:
                time.sleep(args.delay_ms / 1000.0)  # the engine's step time
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise Invalid(422, "body: expected an object")
                ignored = check(body, args)
            except json.JSONDecodeError as e:
                with state.lock:
                    state.rejected.append({"status": 422, "error": f"JSON decode error: {e}"})
                self.reply(422, {"detail": "JSON decode error"})
                return
            except Invalid as e:
                with state.lock:
                    state.rejected.append({"status": e.status, "error": str(e)})
                self.reply(e.status, {"error": {"message": str(e), "code": e.status}})
                return
            if args.status:
                with state.lock:
                    state.rejected.append({"status": args.status, "error": "forced status"})
                self.reply(args.status, {"error": {"message": "forced status", "code": args.status}})
                return
            with state.lock:
                state.accepted.append({"body": body, "ignored": ignored})
            if args.engine == "sglang":
                self.reply(200, {"text": "x", "meta_info": {"prompt_tokens": len(body.get("input_ids") or []),
                                                            "completion_tokens": 1, "finish_reason": {"type": "length"}}})
            else:
                self.reply(200, {"id": "cmpl-standin", "object": "text_completion", "model": args.model,
                                 "choices": [{"index": 0, "text": "x", "finish_reason": "length"}]})

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", choices=["sglang", "vllm"], required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    ap.add_argument("--model", default="Qwen/Qwen3-8B", help="the served model (vLLM checks it)")
    ap.add_argument("--delay-ms", type=int, default=0, help="wait this long before answering a generation call")
    ap.add_argument("--status", type=int, default=0, help="answer every valid generation call with this status")
    ap.add_argument("--priority-scheduling", action="store_true", help="vLLM: accept a priority other than 0")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    state = State()
    srv = ThreadingHTTPServer((args.host, args.port), make_handler(args, state))
    srv.daemon_threads = True
    print(f"standin {args.engine} listening on http://{args.host}:{srv.server_address[1]}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
