#!/usr/bin/python3
"""A stand-in for Dynamo's ZMQ event-plane publisher, for tests,
independent of hintstream's Go parser. It speaks the wire of
ai-dynamo/dynamo's lib/runtime/src/transports/event_plane/:

  zmq_transport.rs @ 9dd09cdb79b2 (ZmqPubTransport::publish):
    multipart [topic, publisher_id (u64 big-endian), sequence (u64
    big-endian), frame]; publisher_id and sequence read back from the
    envelope (decode_envelope_identity)
  frame.rs (Frame::encode): frame = version (1 byte, 1), payload length
    (u32 big-endian), the EventEnvelope bytes
  mod.rs @ 0e8f30094624: a publisher bound directly sends the bare topic
    ("kv-events") in the topic frame; through a broker, the whole subject

It binds an XPUB socket (a PUB that also hears subscriptions, so a test
can wait for its subscriber instead of sleeping) on loopback.

Usage: /usr/bin/python3 dynamopub.py

Commands on stdin, one JSON object per line; each gets one JSON line back:
  {"await": N}   wait (10 s at most) until N subscriptions arrived ->
                 {"ok": true, "subscriptions": [topic, ...]}
  {"send": [{"topic": T, "envelope": hex}, ...]}  one message per item
  {"raw": [[hex, ...], ...]}                       frames as they are
The first stdout line is {"ready": true, "endpoint": ep}. The script exits
when stdin closes.
"""

import json
import struct
import sys

import msgpack
import zmq


def identity(envelope):
    env = msgpack.unpackb(envelope, raw=False)
    return env["publisher_id"], env["sequence"]


def message(topic, envelope):
    pub, seq = identity(envelope)
    frame = struct.pack(">BI", 1, len(envelope)) + envelope
    return [topic.encode("utf-8"), struct.pack(">Q", pub), struct.pack(">Q", seq), frame]


def main():
    ctx = zmq.Context()
    sock = ctx.socket(zmq.XPUB)
    sock.setsockopt(zmq.SNDHWM, 100_000)  # ZMQ_SNDHWM in zmq_transport.rs
    sock.setsockopt(zmq.LINGER, 2000)
    sock.bind("tcp://127.0.0.1:*")
    print(json.dumps({"ready": True, "endpoint": sock.getsockopt(zmq.LAST_ENDPOINT).decode()}), flush=True)
    subs = []
    for line in sys.stdin:
        try:
            cmd = json.loads(line)
            if "await" in cmd:
                poller = zmq.Poller()
                poller.register(sock, zmq.POLLIN)
                while len(subs) < cmd["await"]:
                    if not poller.poll(10_000):
                        raise TimeoutError("%d of %d subscriptions" % (len(subs), cmd["await"]))
                    m = sock.recv()
                    if m[:1] == b"\x01":
                        subs.append(m[1:].decode("utf-8", "replace"))
                reply = {"ok": True, "subscriptions": subs}
            elif "send" in cmd:
                for item in cmd["send"]:
                    sock.send_multipart(message(item["topic"], bytes.fromhex(item["envelope"])))
                reply = {"ok": True, "sent": len(cmd["send"])}
            elif "raw" in cmd:
                for frames in cmd["raw"]:
                    sock.send_multipart([bytes.fromhex(f) for f in frames])
                reply = {"ok": True, "sent": len(cmd["raw"])}
            else:
                reply = {"ok": False, "error": "unknown command"}
        except Exception as e:  # the test reads the reason
            reply = {"ok": False, "error": repr(e)}
        print(json.dumps(reply), flush=True)
    sock.close()
    ctx.term()


if __name__ == "__main__":
    main()
