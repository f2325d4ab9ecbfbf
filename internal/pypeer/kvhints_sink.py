#!/usr/bin/python3
"""A KvHintsEnvelope receiver for tests, independent of the Go encoder.

It decodes what arrives on its PULL sockets as an SGLang scheduler or the
Mooncake master would with msgspec, and is as strict: every string must be
msgpack str (never bin), required fields must be present, integers must be
integers (not floats, not bools) within range. Unknown fields and unknown
payload keys are ignored, as msgspec does by default.

Usage:
  /usr/bin/python3 kvhints_sink.py --bind tcp://127.0.0.1:5570 [--bind ...]

Output, one JSON object per line on stdout:
  {"ready": true, "endpoints": [...]}        once every socket is bound
  {"endpoint": ep, "ok": true, "envelope": {...}}
  {"endpoint": ep, "ok": false, "error": "..."}

It exits cleanly on SIGTERM, SIGINT, or when stdin is closed (unless
--no-stdin), so a parent that dies takes it along.
"""

import argparse
import json
import signal
import sys

import msgpack
import zmq

U32 = 1 << 32


class Invalid(Exception):
    pass


def kind(v):
    """The type name msgspec uses in its errors."""
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
    if isinstance(v, (list, tuple)):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def want_str(v, at):
    if not isinstance(v, str):
        raise Invalid(f"Expected `str`, got `{kind(v)}` - at `{at}`")
    return v


def want_int(v, at, lo=None, hi=None):
    if isinstance(v, bool) or not isinstance(v, int):
        raise Invalid(f"Expected `int`, got `{kind(v)}` - at `{at}`")
    if lo is not None and v < lo:
        raise Invalid(f"Expected `int` >= {lo} - at `{at}`")
    if hi is not None and v > hi:
        raise Invalid(f"Expected `int` <= {hi} - at `{at}`")
    return v


def want_list(v, at):
    if not isinstance(v, list):
        raise Invalid(f"Expected `array`, got `{kind(v)}` - at `{at}`")
    return v


def want_object(v, at):
    """A msgpack map whose keys are all str, as a Struct or dict[str, ...]."""
    if not isinstance(v, dict):
        raise Invalid(f"Expected `object`, got `{kind(v)}` - at `{at}`")
    for k in v:
        if not isinstance(k, str):
            raise Invalid(f"Expected `str`, got `{kind(k)}` - at `key in {at}`")
    return v


def want_struct(v, at, fields):
    """fields: name -> checker(value, at). All are required."""
    want_object(v, at)
    for name in fields:
        if name not in v:
            raise Invalid(f"Object missing required field `{name}` - at `{at}`")
    for name, check in fields.items():
        check(v[name], f"{at}.{name}")
    return v


def token_ids(v, at):
    for i, t in enumerate(want_list(v, at)):
        want_int(t, f"{at}[{i}]", 0, U32 - 1)


def str_list(v, at):
    for i, k in enumerate(want_list(v, at)):
        want_str(k, f"{at}[{i}]")


PAYLOADS = {
    # kv.prefetch@1.0, as the worker converts the payload dict to its Struct.
    "kv.prefetch": {
        "request_id": want_str,
        "session_id": want_str,
        "model": want_str,
        "token_ids": token_ids,
        "dp_rank": lambda v, at: want_int(v, at, 0, U32 - 1),
        "expires_at_ms": want_int,
    },
    # kv.pin@1.0, as the Mooncake master converts the payload dict:
    # ttl_ms 0 releases the slot, so keys may then be empty.
    "kv.pin": {
        "slot": want_str,
        "keys": str_list,
        "ttl_ms": lambda v, at: want_int(v, at, 0),
        "priority": lambda v, at: want_int(v, at, 1, 100),
        "tokens": lambda v, at: want_int(v, at, 0),
    },
}


def action(v, at):
    want_struct(v, at, {
        "action_id": want_str,
        "action_type": want_str,
        "action_version": want_str,
        "payload": want_object,  # dict[str, Any]
    })
    fields = PAYLOADS.get(v["action_type"])
    if fields is not None:
        want_struct(v["payload"], f"{at}.payload", fields)


def actions(v, at):
    for i, a in enumerate(want_list(v, at)):
        action(a, f"{at}[{i}]")


ENVELOPE = {
    "protocol_version": want_str,
    "message_id": want_str,
    "actions": actions,
}


def decode(frames):
    if len(frames) != 1:
        raise Invalid(f"expected 1 frame, got {len(frames)}")
    try:
        # raw=False: str -> str, bin -> bytes, so the type checks see the
        # difference. unpackb rejects trailing bytes and invalid UTF-8.
        obj = msgpack.unpackb(frames[0], raw=False, strict_map_key=False,
                              use_list=True)
    except Exception as e:  # any malformed msgpack
        raise Invalid(f"MessagePack data is malformed: {type(e).__name__}: {e}")
    return want_struct(obj, "$", ENVELOPE)


def jsonable(o):
    if isinstance(o, (bytes, bytearray)):
        return {"$bytes": bytes(o).hex()}
    return {"$repr": repr(o)}


def line(obj):
    sys.stdout.write(json.dumps(obj, default=jsonable, allow_nan=False) + "\n")
    sys.stdout.flush()


def handle(ep, frames):
    try:
        env = decode(frames)
    except Invalid as e:
        line({"endpoint": ep, "ok": False, "error": str(e)})
        return
    try:
        line({"endpoint": ep, "ok": True, "envelope": env})
    except ValueError as e:  # NaN or inf in an unknown field
        line({"endpoint": ep, "ok": True, "envelope": None,
              "error": f"envelope not representable as JSON: {e}"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", action="append", required=True,
                    help="endpoint to bind a PULL socket at (repeatable); "
                         "port * or 0 picks a free one")
    ap.add_argument("--no-stdin", action="store_true",
                    help="do not exit when stdin closes")
    args = ap.parse_args()

    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))

    ctx = zmq.Context()
    socks = []
    for ep in args.bind:
        s = ctx.socket(zmq.PULL)
        s.setsockopt(zmq.LINGER, 0)
        s.bind(ep)
        socks.append((s, s.getsockopt_string(zmq.LAST_ENDPOINT)))
    line({"ready": True, "endpoints": [ep for _, ep in socks]})

    poller = zmq.Poller()
    for s, _ in socks:
        poller.register(s, zmq.POLLIN)
    stdin = None if args.no_stdin else sys.stdin.buffer.raw
    if stdin is not None:
        poller.register(stdin.fileno(), zmq.POLLIN)

    while not stop:
        ready = dict(poller.poll(100))
        if stdin is not None and stdin.fileno() in ready:
            if not stdin.read(4096):
                break
        for s, ep in socks:
            if s not in ready:
                continue
            while True:
                try:
                    frames = s.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                handle(ep, frames)

    for s, _ in socks:
        s.close(0)
    ctx.term()
    return 0


if __name__ == "__main__":
    sys.exit(main())
