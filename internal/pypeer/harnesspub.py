#!/usr/bin/python3
"""An agent harness's tool-event publisher for tests, independent of Go.

It binds a PUB socket and sends Dynamo's harness wire, as Dynamo's relay
reads it (lib/llm/src/agents/trace/relay.rs):

  multipart [topic, seq (8 bytes big-endian), msgpack(AgentTraceRecord)]

with the record packed as rmp_serde::to_vec_named would (a map of str
keys; strings as msgpack str).  Sequence numbers are the harness's own:
1, 2, 3, ... from start-up unless a command names one.

Usage:
  /usr/bin/python3 harnesspub.py [--port P] [--topic T]

Commands on stdin, one JSON object per line; each gets one JSON line back:
  {"event": {...record...}, "seq": n?}   pack and send one record; without
      "seq" the next of the harness's counter.  -> {"ok": true, "seq": n}
  {"raw": ["hex", ...]}                  send these frames as they are.
The first stdout line is {"ready": true, "pub": endpoint}.  The script
exits when stdin closes or on SIGTERM/SIGINT.
"""

import argparse
import json
import signal
import sys

import msgpack
import zmq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--topic", default="")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    if args.port:
        pub.bind("tcp://127.0.0.1:%d" % args.port)
    else:
        pub.bind_to_random_port("tcp://127.0.0.1")
    endpoint = pub.getsockopt(zmq.LAST_ENDPOINT).decode()
    topic = args.topic.encode("utf-8")
    seq = 0
    print(json.dumps({"ready": True, "pub": endpoint}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
            if "event" in cmd:
                if "seq" in cmd:
                    n = int(cmd["seq"])
                else:
                    seq += 1
                    n = seq
                body = msgpack.packb(cmd["event"], use_bin_type=True)
                pub.send_multipart([topic, n.to_bytes(8, "big"), body])
                reply = {"ok": True, "seq": n}
            elif "raw" in cmd:
                pub.send_multipart([bytes.fromhex(h) for h in cmd["raw"]])
                reply = {"ok": True}
            else:
                reply = {"ok": False, "error": "unknown command"}
        except Exception as e:  # a test's mistake, told back to it
            reply = {"ok": False, "error": repr(e)}
        print(json.dumps(reply), flush=True)
    pub.close()
    ctx.term()


if __name__ == "__main__":
    main()
