#!/usr/bin/python3
"""Reference receiver of hintstream's KV-cache hints, for a Python scheduler.

This is the piece an SGLang scheduler (kv.prefetch) or a Mooncake master
(kv.pin) integrator copies: it binds a ZeroMQ PULL socket (optionally as a
CURVE server), decodes each KvHintsEnvelope as strictly as SGLang's msgspec
structs do (python/sglang/srt/managers/kv_hints.py), drops a repeated
message_id within a bounded window and a prefetch past its expires_at_ms
(both counted), applies a kv.pin message only when its revision is
above the last applied to its slot (an overtaken pin, renewal or release
is counted "stale"; see docs/wire.md), and hands each kv.prefetch@1.0 and kv.pin@1.0 action to a
callback. It needs only Debian's python3-zmq and python3-msgpack.

Library use:

    from hintstream_receiver import Receiver
    r = Receiver("tcp://0.0.0.0:5570",
                 on_prefetch=lambda msg_id, p: scheduler.prefetch(p["token_ids"]),
                 on_pin=lambda msg_id, p: master.soft_pin(p["keys"], p["ttl_ms"]))
    r.serve_forever()          # or r.poll_once(timeout_ms) from your own loop

Command line (prints one JSON object per hint, as `hintstream sink` does):

    /usr/bin/python3 hintstream_receiver.py --bind tcp://127.0.0.1:5570 \
        [--curve-secret-key-file FILE] [--dedup-window 4096] [--slot-window 65536]

Output lines: {"ready": true, "endpoint": ...} once bound, then per hint
{"endpoint", "message_id", "action_id", "action_type", "action_version",
"payload"}; on exit (SIGTERM, SIGINT, or stdin closed unless --no-stdin)
{"counters": {...}}. Rejected envelopes are reported on stderr.

The rules match the Go receiver (package receiver in the hintstream
repository); docs/wire.md describes the envelope and both payloads.
"""

import argparse
import collections
import json
import select
import signal
import sys
import time

import msgpack
import zmq

U32 = (1 << 32) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
DEFAULT_DEDUP_WINDOW = 4096
# Pin slots whose last applied revision is remembered (least recently
# applied out), as the Go receiver's DefaultSlotWindow.
DEFAULT_SLOT_WINDOW = 65536


class Invalid(Exception):
    """An envelope that a strict (msgspec-like) decoder rejects."""


def _kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    if isinstance(v, (bytes, bytearray)):
        return "bytes"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _str(v, at):
    if not isinstance(v, str):
        raise Invalid(f"Expected `str`, got `{_kind(v)}` - at `{at}`")
    return v


def _int(v, at, lo=I64_MIN, hi=I64_MAX):
    if isinstance(v, bool) or not isinstance(v, int):
        raise Invalid(f"Expected `int`, got `{_kind(v)}` - at `{at}`")
    if v < lo or v > hi:
        raise Invalid(f"Expected `int` in {lo}..{hi} - at `{at}`")
    return v


def _list(v, at, item):
    if not isinstance(v, list):
        raise Invalid(f"Expected `array`, got `{_kind(v)}` - at `{at}`")
    for i, x in enumerate(v):
        item(x, f"{at}[{i}]")
    return v


def _object(v, at, fields, required):
    """fields: name -> checker; required: names that must be present."""
    if not isinstance(v, dict):
        raise Invalid(f"Expected `object`, got `{_kind(v)}` - at `{at}`")
    for k in v:
        if not isinstance(k, str):
            raise Invalid(f"Expected `str`, got `{_kind(k)}` - at `key in {at}`")
    for name in required:
        if name not in v:
            raise Invalid(f"Object missing required field `{name}` - at `{at}`")
    for name, check in fields.items():
        if name in v:
            check(v[name], f"{at}.{name}")
    return v


PREFETCH = ({"request_id": _str, "session_id": _str, "model": _str,
             "token_ids": lambda v, at: _list(v, at, lambda t, a: _int(t, a, 0, U32)),
             "dp_rank": lambda v, at: _int(v, at, 0, U32),
             "expires_at_ms": _int,
             "worker_id": lambda v, at: _int(v, at, 0, (1 << 64) - 1),
             "cache_salt": _str},
            ("request_id", "token_ids"))
PIN = ({"slot": _str,
        "keys": lambda v, at: _list(v, at, _str),
        "ttl_ms": lambda v, at: _int(v, at, 0),
        "priority": lambda v, at: _int(v, at, 1, 100),
        "tokens": lambda v, at: _int(v, at, 0),
        "revision": lambda v, at: _int(v, at, 0)},
       ("slot", "keys", "ttl_ms", "priority", "tokens"))
KNOWN = {("kv.prefetch", "1.0"): PREFETCH, ("kv.pin", "1.0"): PIN}


def _action(v, at):
    _object(v, at, {"action_id": _str, "action_type": _str, "action_version": _str,
                    "payload": lambda p, a: _object(p, a, {}, ())},
            ("action_id", "action_type", "action_version", "payload"))
    spec = KNOWN.get((v["action_type"], v["action_version"]))
    if spec is not None:
        _object(v["payload"], f"{at}.payload", *spec)


def decode(data):
    """Decode one KvHintsEnvelope; raises Invalid."""
    try:
        # raw=False keeps str and bin apart; unpackb rejects trailing bytes.
        env = msgpack.unpackb(data, raw=False, strict_map_key=False, use_list=True)
    except Exception as e:
        raise Invalid(f"MessagePack data is malformed: {type(e).__name__}: {e}")
    return _object(env, "$", {"protocol_version": _str, "message_id": _str,
                              "actions": lambda v, at: _list(v, at, _action)},
                   ("protocol_version", "message_id", "actions"))


class Receiver:
    """A bound PULL socket and the receiving rules (see the module doc).

    on_prefetch(message_id, payload) and on_pin(message_id, payload) are
    called on the caller's thread for each accepted action; payload is
    the decoded dict. clock returns Unix milliseconds (default: now).
    """

    def __init__(self, bind, on_prefetch=None, on_pin=None, curve_secret_key=None,
                 dedup_window=DEFAULT_DEDUP_WINDOW, clock=None, ctx=None,
                 slot_window=DEFAULT_SLOT_WINDOW, worker_id=None):
        if dedup_window <= 0:
            raise ValueError("dedup_window must be positive")
        if slot_window <= 0:
            raise ValueError("slot_window must be positive")
        self._revs = collections.OrderedDict()
        self._slot_window = slot_window
        # A prefetch whose worker_id names another worker is dropped
        # (counted as other_worker); None or a payload without one: taken.
        self.worker_id = worker_id
        self.on_prefetch = on_prefetch or (lambda mid, p: None)
        self.on_pin = on_pin or (lambda mid, p: None)
        self.clock = clock or (lambda: int(time.time() * 1000))
        self.counters = collections.Counter()
        self._seen = collections.OrderedDict()
        self._window = dedup_window
        self._ctx = ctx or zmq.Context.instance()
        self.sock = self._ctx.socket(zmq.PULL)
        self.sock.setsockopt(zmq.LINGER, 0)
        if curve_secret_key:
            if not zmq.has("curve"):
                raise RuntimeError("libzmq has no CURVE support")
            self.sock.curve_server = True
            self.sock.curve_secretkey = curve_secret_key.encode()
        self.sock.bind(bind)
        self.endpoint = self.sock.getsockopt_string(zmq.LAST_ENDPOINT)

    def handle(self, data):
        """Apply the rules to one message; returns the accepted actions."""
        self.counters["received"] += 1
        try:
            env = decode(data)
        except Invalid as e:
            self.counters["invalid"] += 1
            print(f"hintstream_receiver: rejected: {e}", file=sys.stderr, flush=True)
            return []
        mid = env["message_id"]
        if mid in self._seen:
            self.counters["duplicate"] += 1
            return []
        self._seen[mid] = True
        if len(self._seen) > self._window:
            self._seen.popitem(last=False)
        out, now = [], self.clock()
        for a in env["actions"]:
            key = (a["action_type"], a["action_version"])
            if key == ("kv.prefetch", "1.0"):
                exp = a["payload"].get("expires_at_ms", 0)
                if exp and exp <= now:
                    self.counters["expired"] += 1
                    continue
                wid = a["payload"].get("worker_id", 0)
                if self.worker_id and wid and wid != self.worker_id:
                    self.counters["other_worker"] += 1
                    continue
                self.on_prefetch(mid, a["payload"])
            elif key == ("kv.pin", "1.0"):
                if not self._newer(a["payload"]["slot"], a["payload"].get("revision", 0)):
                    self.counters["stale"] += 1
                    continue
                self.on_pin(mid, a["payload"])
            else:
                self.counters["unknown_action"] += 1
                continue
            self.counters["delivered|" + a["action_type"]] += 1
            out.append((mid, a))
        return out

    def _newer(self, slot, rev):
        """The revision rule (docs/wire.md): a pin, renewal or release with
        a revision is applied only above the slot's last; 0 (absent) is
        always applied and changes nothing. As vLLM's vllm.set_priority
        claims (vllm/v1/kv_hints/README.md)."""
        if rev == 0:
            return True
        last = self._revs.get(slot)
        if last is not None and rev <= last:
            return False
        self._revs[slot] = rev
        self._revs.move_to_end(slot)
        if len(self._revs) > self._slot_window:
            self._revs.popitem(last=False)
        return True

    def poll_once(self, timeout_ms=100):
        """Handle every message waiting, after up to timeout_ms for one;
        returns the accepted (message_id, action) pairs."""
        out = []
        if not self.sock.poll(timeout_ms, zmq.POLLIN):
            return out
        while True:
            try:
                frames = self.sock.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return out
            if len(frames) != 1:
                self.counters["received"] += 1
                self.counters["invalid"] += 1
                continue
            out.extend(self.handle(frames[0]))

    def serve_forever(self, stop=lambda: False):
        while not stop():
            self.poll_once()

    def close(self):
        self.sock.close(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", required=True, help="endpoint to bind the PULL socket at (port * picks one)")
    ap.add_argument("--curve-secret-key-file", help="Z85 CURVE secret key: the socket becomes a CURVE server")
    ap.add_argument("--dedup-window", type=int, default=DEFAULT_DEDUP_WINDOW)
    ap.add_argument("--slot-window", type=int, default=DEFAULT_SLOT_WINDOW)
    ap.add_argument("--no-stdin", action="store_true", help="do not exit when stdin closes")
    ap.add_argument("--worker-id", type=int, help="drop prefetches whose worker_id names another worker")
    args = ap.parse_args()

    def line(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    secret = None
    if args.curve_secret_key_file:
        with open(args.curve_secret_key_file) as f:
            secret = f.read().strip()
    # The callbacks stay no-ops: main prints from handle's result, which
    # keeps each action's ids.
    r = Receiver(args.bind, curve_secret_key=secret, dedup_window=args.dedup_window,
                 slot_window=args.slot_window, worker_id=args.worker_id)
    line({"ready": True, "endpoint": r.endpoint})

    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))
    stdin = None if args.no_stdin else sys.stdin.buffer.raw
    while not stop:
        for mid, a in r.poll_once(100):
            line({"endpoint": r.endpoint, "message_id": mid, "action_id": a["action_id"],
                  "action_type": a["action_type"], "action_version": a["action_version"],
                  "payload": a["payload"]})
        # A parent that dies closes our stdin: exit with it.
        if stdin is not None and select.select([stdin], [], [], 0)[0] and not stdin.read(4096):
            break
    line({"counters": dict(r.counters)})
    r.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
