#!/usr/bin/python3
"""A vLLM-like KV-event publisher for tests, independent of the Go bridge.

It binds a PUB socket and a ROUTER replay socket and speaks their wire as
vLLM's ZmqEventPublisher (vllm/distributed/kv_events.py) does:

  PUB:    multipart [topic, seq (8 bytes big-endian), payload (msgpack)]
  ROUTER: request [identity, b"", start_seq (8 bytes big-endian)];
          reply one [identity, b"", seq, payload] per buffered batch with
          seq >= start_seq, then [identity, b"", END_SEQ (-1, 8 bytes), b""]

Each batch is appended to the replay buffer (a deque of --buffer-steps)
after it is sent, as vLLM does.

Usage:
  /usr/bin/python3 enginepub.py [--topic T] [--dp-rank R] [--buffer-steps N]

Commands on stdin, one JSON object per line; each gets one JSON line back:
  {"publish": N}  make N batches, send them on PUB, keep them for replay
  {"skip": K}     make K batches, keep them for replay only (lost on PUB)
  {"restart": true}  a new engine incarnation: seq back to 0, buffer cleared
  {"stats": true} -> {"ok": true, "replay_requests": n}
Replies to publish and skip: {"ok": true, "batches": [{"seq": s,
"payload": hex}, ...]}. An unusable command gets {"ok": false, "error": ...}.

The first stdout line is {"ready": true, "pub": ep, "replay": ep}. Batches
alternate between the current map form (even seq) and the older array form
(odd seq); each holds one BlockStored of two 16-token blocks. The script
exits when stdin closes or on SIGTERM/SIGINT.
"""

import argparse
import collections
import json
import signal
import sys
import time

import msgpack
import zmq

END_SEQ = (-1).to_bytes(8, "big", signed=True)


class Engine:
    def __init__(self, args):
        self.topic = args.topic.encode("utf-8")
        self.dp_rank = args.dp_rank
        self.buffer = collections.deque(maxlen=args.buffer_steps)
        self.replay_requests = 0
        self.incarnation = 0
        self.seq = 0
        self.base_ts = time.time()

        self.ctx = zmq.Context()
        self.pub = self.ctx.socket(zmq.PUB)
        self.pub.set_hwm(100_000)  # as vLLM's default hwm
        self.pub.setsockopt(zmq.LINGER, 0)
        self.pub.bind("tcp://127.0.0.1:*")
        self.replay = self.ctx.socket(zmq.ROUTER)
        self.replay.setsockopt(zmq.LINGER, 0)
        self.replay.bind("tcp://127.0.0.1:*")

    def batch(self, seq):
        """A vLLM-shaped EventBatch; distinct per incarnation and seq."""
        ts = self.base_ts + seq / 1000.0
        first = 1000 * (self.incarnation + 1) + seq
        tokens = [(first * 32 + i) % 150_000 for i in range(32)]
        hashes = [(first << 8) | 1, (first << 8) | 2]
        parent = None if seq == 0 else ((first - 1) << 8) | 2
        if seq % 2 == 0:
            ev = {"type": "BlockStored", "block_hashes": hashes,
                  "parent_block_hash": parent, "token_ids": tokens,
                  "block_size": 16, "lora_id": None, "medium": "GPU",
                  "lora_name": None}
            obj = {"ts": ts, "events": [ev],
                   "data_parallel_rank": self.dp_rank}
        else:
            ev = ["BlockStored", hashes, parent, tokens, 16, None, "GPU"]
            obj = [ts, [ev], self.dp_rank]
        return msgpack.packb(obj, use_bin_type=True)

    def make(self, n, send):
        out = []
        for _ in range(n):
            seq = self.seq
            self.seq += 1
            payload = self.batch(seq)
            if send:
                self.pub.send_multipart((self.topic, seq.to_bytes(8, "big"),
                                         payload))
            self.buffer.append((seq, payload))
            out.append({"seq": seq, "payload": payload.hex()})
        return out

    def restart(self):
        self.incarnation += 1
        self.seq = 0
        self.buffer.clear()
        self.base_ts = time.time() + self.incarnation

    def service_replay(self):
        """vLLM's ZmqEventPublisher._service_replay, step for step."""
        frame = self.replay.recv_multipart()
        if len(frame) != 3:
            sys.stderr.write(f"invalid replay request: {frame!r}\n")
            return
        self.replay_requests += 1
        client_id, _, start_seq_bytes = frame
        start_seq = int.from_bytes(start_seq_bytes, "big")
        for seq, buf in self.buffer:
            if seq >= start_seq:
                self.replay.send_multipart(
                    (client_id, b"", seq.to_bytes(8, "big"), buf))
        self.replay.send_multipart((client_id, b"", END_SEQ, b""))

    def command(self, cmd):
        if not isinstance(cmd, dict):
            raise ValueError("command must be a JSON object")
        if "publish" in cmd:
            return {"ok": True, "batches": self.make(count(cmd["publish"]), True)}
        if "skip" in cmd:
            return {"ok": True, "batches": self.make(count(cmd["skip"]), False)}
        if cmd.get("restart"):
            self.restart()
            return {"ok": True}
        if cmd.get("stats"):
            return {"ok": True, "replay_requests": self.replay_requests}
        raise ValueError(f"unknown command {cmd!r}")

    def close(self):
        self.pub.close(0)
        self.replay.close(0)
        self.ctx.term()


def count(v):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"want a count >= 0, got {v!r}")
    return v


def line(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topic", default="")
    ap.add_argument("--dp-rank", type=int, default=0)
    ap.add_argument("--buffer-steps", type=int, default=10_000)
    args = ap.parse_args()

    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(True))

    eng = Engine(args)
    line({"ready": True,
          "pub": eng.pub.getsockopt_string(zmq.LAST_ENDPOINT),
          "replay": eng.replay.getsockopt_string(zmq.LAST_ENDPOINT)})

    stdin = sys.stdin.buffer.raw
    poller = zmq.Poller()
    poller.register(eng.replay, zmq.POLLIN)
    poller.register(stdin.fileno(), zmq.POLLIN)
    pending = b""
    while not stop:
        ready = dict(poller.poll(100))
        if eng.replay in ready:
            eng.service_replay()
        if stdin.fileno() not in ready:
            continue
        chunk = stdin.read(65536)
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            raw, pending = pending.split(b"\n", 1)
            if not raw.strip():
                continue
            try:
                line(eng.command(json.loads(raw)))
            except (ValueError, KeyError, TypeError) as e:
                line({"ok": False, "error": str(e)})
    eng.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
