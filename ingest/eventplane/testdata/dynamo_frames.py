#!/usr/bin/python3
"""Independent builder of Dynamo event-plane frames (msgpack, rmp_serde
to_vec_named shapes), written from ai-dynamo/dynamo's source, not from
hintstream's Go decoder:

  envelope   lib/runtime/src/transports/event_plane/codec.rs @ bf0be57c8cf2
             (BorrowedEventEnvelope field order: publisher_id, sequence,
             published_at, topic, payload as bin)
  subject    lib/runtime/src/discovery/mod.rs @ 020f5c1764a9
             (namespace.{ns}.component.{comp}[.endpoint.{ep}].{topic})
  payloads   lib/kv-router/src/protocols.rs @ 038eab23a6b6
             (RouterEvent, KvCacheEvent, KvCacheEventData, ActiveLoad,
             ActiveSequenceEvent, ActiveSequenceEventBatch,
             ActiveSequenceEventData, PrefillLoadHint; serde's externally
             tagged enums: unit variants as a bare string, the struct
             variant AddRequest as {"AddRequest": {...}}; Duration as
             {secs, nanos}); the isl/overlap AddRequest of earlier revisions
  batching   lib/llm/src/kv_router/sequence.rs @ 0266c3eba4f5 (one event a
             frame on NATS, {events: [...]} on ZMQ)
  hashing    lib/kv-router/src/protocols.rs (compute_block_hash_for_seq) and
             lib/kv-hashing/src/salt.rs: block seed 1337 + xxh3(lora, 0) +
             xxh3(cache namespace, 1), wrapping; chain seed 1337.

  dynamo_frames.py samples DIR   writes DIR/*.msgpack and DIR/samples.json
  dynamo_frames.py sequences DIR writes DIR/seq_*.msgpack and DIR/sequences.json
  dynamo_frames.py frame         JSON spec on stdin -> one frame on stdout
  dynamo_frames.py frames        JSON list of specs on stdin -> JSON list of
                                 {"subject", "hex"} on stdout (kinds "kv",
                                 "load" and "sequence": see frame())
"""
import json
import os
import struct
import sys

import msgpack
import xxhash

M64 = (1 << 64) - 1


def segment(v):
    """encode_event_segment: keep [A-Za-z0-9_-], percent-encode the rest."""
    out = []
    for c in v.encode():
        ch = chr(c)
        if ch.isascii() and (ch.isalnum() or ch in "-_"):
            out.append(ch)
        else:
            out.append("%%%02X" % c)
    return "".join(out)


def subject(ns, comp, topic, endpoint=None):
    s = "namespace.%s.component.%s" % (segment(ns), segment(comp))
    if endpoint is not None:
        s += ".endpoint." + segment(endpoint)
    return s + "." + segment(topic)


def envelope(publisher_id, sequence, published_at, topic, payload):
    # A dict keeps insertion order: serde's field order.
    return msgpack.packb({"publisher_id": publisher_id, "sequence": sequence,
                          "published_at": published_at, "topic": topic,
                          "payload": payload}, use_bin_type=True)


def block_seed(lora=None, salt=None):
    seed = 1337
    if lora:
        seed = (seed + xxhash.xxh3_64_intdigest(lora.encode(), seed=0)) & M64
    if salt:
        seed = (seed + xxhash.xxh3_64_intdigest(salt.encode(), seed=1)) & M64
    return seed


def local_hashes(tokens, block_size, lora=None, salt=None):
    seed = block_seed(lora, salt)
    n = len(tokens) // block_size
    return [xxhash.xxh3_64_intdigest(struct.pack("<%dI" % block_size, *tokens[i * block_size:(i + 1) * block_size]), seed=seed)
            for i in range(n)]


def stored_data(blocks, parent=None, start_position=None):
    return {"stored": {"parent_hash": parent, "start_position": start_position,
                       "blocks": [{"block_hash": b, "tokens_hash": t, "mm_extra_info": None} for b, t in blocks]}}


def router_event(worker_id, event_id, data, dp_rank=0, tier="device", domain="worker"):
    ev = {"worker_id": worker_id, "storage_tier": tier}
    if domain is not None:
        ev["residency_domain"] = domain
    ev["event"] = {"event_id": event_id, "data": data, "dp_rank": dp_rank}
    return msgpack.packb(ev, use_bin_type=True)


def active_load(worker_id, dp_rank, decode=None, prefill=None, used=None, scope=None, with_scope=True):
    load = {"worker_id": worker_id, "dp_rank": dp_rank, "active_decode_blocks": decode,
            "active_prefill_tokens": prefill}
    if with_scope:
        load["scheduler_load_scope"] = scope
    load["kv_used_blocks"] = used
    return msgpack.packb(load, use_bin_type=True)


def seq_hashes(local):
    """Dynamo's rolling sequence hashes: seq[0] = local[0], then
    xxh3(u64le(parent) || u64le(local), seed 1337)."""
    out = []
    for h in local:
        out.append(h if not out else xxhash.xxh3_64_intdigest(struct.pack("<QQ", out[-1], h), seed=1337))
    return out


def sequence_event(request_id, worker_id, dp_rank, data, router_id=0, lora_name=None):
    # ActiveSequenceEvent's field order; lora_name is an Option, written as nil.
    return {"request_id": request_id, "worker": {"worker_id": worker_id, "dp_rank": dp_rank},
            "data": data, "router_id": router_id, "lora_name": lora_name}


def add_request(token_sequence, track_prefill_tokens=True, expected_output_tokens=None, hint=None):
    return {"AddRequest": {"token_sequence": token_sequence, "track_prefill_tokens": track_prefill_tokens,
                           "expected_output_tokens": expected_output_tokens, "prefill_load_hint": hint}}


def add_request_legacy(token_sequence, isl, overlap, expected_output_tokens=None):
    return {"AddRequest": {"token_sequence": token_sequence, "isl": isl, "overlap": overlap,
                           "expected_output_tokens": expected_output_tokens}}


def prefill_hint(tokens, duration_ns=None):
    dur = None if duration_ns is None else {"secs": duration_ns // 10**9, "nanos": duration_ns % 10**9}
    return {"initial_effective_prefill_tokens": tokens, "expected_prefill_duration": dur}


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True)


def sequence_samples():
    toks = list(range(2000, 2000 + 48))
    hashes = seq_hashes(local_hashes(toks, 16))
    router = 0x0ABCDEF012345  # a discovery instance id
    out = []

    def expect(ev, **kw):
        x = {"request_id": ev["request_id"], "worker_id": ev["worker"]["worker_id"],
             "dp_rank": ev["worker"]["dp_rank"], "router_id": ev["router_id"], "lora_name": ev["lora_name"] or ""}
        x.update(kw)
        return x

    ev = sequence_event("req-1", 7, 0, add_request(hashes, expected_output_tokens=128), router_id=router)
    out.append(("seq_add_nats", PUB + 3, 0, pack(ev), False,
                [expect(ev, kind="AddRequest", hashes=hashes, has_sequence=True, track_prefill_tokens=True,
                        expected_output_tokens=128)]))
    ev = sequence_event("req-2", 8, 1, add_request(None, track_prefill_tokens=False,
                                                   hint=prefill_hint(3000, 1_250_000_000)),
                        router_id=router, lora_name="sql-adapter")
    out.append(("seq_add_untracked_lora", PUB + 3, 1, pack(ev), False,
                [expect(ev, kind="AddRequest", hashes=None, has_sequence=False, track_prefill_tokens=False,
                        hint_tokens=3000, hint_duration_ns=1_250_000_000)]))
    ev = sequence_event("req-3", 7, 0, add_request_legacy(hashes[:2], 40, 1), router_id=router)
    out.append(("seq_add_legacy", PUB + 3, 2, pack(ev), False,
                [expect(ev, kind="AddRequest", hashes=hashes[:2], has_sequence=True, track_prefill_tokens=True,
                        isl=40, overlap=1)]))
    evs = [sequence_event("req-4", 9, 0, add_request(hashes, hint=prefill_hint(48)), router_id=router),
           sequence_event("req-4", 9, 0, "MarkPrefillCompleted", router_id=router),
           sequence_event("req-1", 7, 0, "Free", router_id=router)]
    out.append(("seq_batch_zmq", PUB + 4, 5, pack({"events": evs}), True,
                [expect(evs[0], kind="AddRequest", hashes=hashes, has_sequence=True, track_prefill_tokens=True,
                        hint_tokens=48),
                 expect(evs[1], kind="MarkPrefillCompleted"), expect(evs[2], kind="Free")]))
    return out


def write_sequences(d):
    index = []
    for name, pub, seq, payload, batch, events in sequence_samples():
        with open(os.path.join(d, name + ".msgpack"), "wb") as f:
            f.write(envelope(pub, seq, AT + seq, "active_sequences_events", payload))
        index.append({"name": name, "subject": subject("dynamo", "backend", "active_sequences_events",
                                                       endpoint="generate"),
                      "publisher_id": pub, "sequence": seq, "batch": batch, "events": events})
    with open(os.path.join(d, "sequences.json"), "w") as f:
        json.dump({"about": __doc__.strip().splitlines()[0], "samples": index}, f, indent=1)
        f.write("\n")


PUB = 0x1F2E3D4C5B6A79  # below 2^53, as discovery_safe_publisher_id keeps it
AT = 1764547200000


def samples():
    """Each sample: name, subject, frame bytes, what a decoder must read."""
    toks = list(range(1000, 1000 + 32))
    lh = local_hashes(toks, 16)
    lora = local_hashes(toks, 16, lora="sql-adapter")
    out = []

    def add(name, subj, frame, expect):
        out.append((name, subj, frame, expect))

    sub_kv = subject("dynamo", "backend", "kv-events")
    data = stored_data([(0xA1, lh[0]), (0xA2, lh[1])])
    add("kv_stored_device", sub_kv,
        envelope(PUB, 0, AT, "kv-events", router_event(7, 42, data)),
        {"publisher_id": PUB, "sequence": 0, "published_at": AT, "worker_id": 7, "dp_rank": 0,
         "event_id": 42, "kind": "stored", "tier": "device", "parent": None,
         "blocks": [[0xA1, lh[0]], [0xA2, lh[1]]]})
    data = stored_data([(0xB2, lh[1])], parent=0xB1, start_position=1)
    add("kv_stored_host_dp1", sub_kv,
        envelope(PUB, 1, AT + 5, "kv-events", router_event(7, 43, data, dp_rank=1, tier="host_pinned")),
        {"publisher_id": PUB, "sequence": 1, "published_at": AT + 5, "worker_id": 7, "dp_rank": 1,
         "event_id": 43, "kind": "stored", "tier": "host_pinned", "parent": 0xB1, "start_position": 1,
         "blocks": [[0xB2, lh[1]]]})
    data = stored_data([(0xC1, lora[0]), (0xC2, lora[1])])
    add("kv_stored_lora_disk", sub_kv,
        envelope(PUB, 300, AT + 9, "kv-events", router_event(8, 70000, data, tier="disk")),
        {"publisher_id": PUB, "sequence": 300, "published_at": AT + 9, "worker_id": 8, "dp_rank": 0,
         "event_id": 70000, "kind": "stored", "tier": "disk", "parent": None,
         "blocks": [[0xC1, lora[0]], [0xC2, lora[1]]]})
    big = (1 << 64) - 5
    add("kv_removed", sub_kv,
        envelope(PUB, 2, AT + 10, "kv-events", router_event(7, 44, {"removed": {"block_hashes": [0xA2, big]}})),
        {"publisher_id": PUB, "sequence": 2, "published_at": AT + 10, "worker_id": 7, "dp_rank": 0,
         "event_id": 44, "kind": "removed", "tier": "device", "removed": [0xA2, big]})
    add("kv_cleared_legacy", sub_kv,
        envelope(PUB, 3, AT + 11, "kv-events", router_event(7, 45, "cleared", domain=None)),
        {"publisher_id": PUB, "sequence": 3, "published_at": AT + 11, "worker_id": 7, "dp_rank": 0,
         "event_id": 45, "kind": "cleared", "tier": "device"})
    sub_load = subject("dynamo", "backend", "kv_metrics", endpoint="generate")
    add("load_worker", sub_load,
        envelope(PUB + 1, 0, AT, "kv_metrics", active_load(7, 0, decode=12, used=40, with_scope=False)),
        {"publisher_id": PUB + 1, "sequence": 0, "published_at": AT, "worker_id": 7, "dp_rank": 0,
         "active_decode_blocks": 12, "active_prefill_tokens": None, "kv_used_blocks": 40})
    add("load_scheduler", subject("dynamo", "router", "kv_metrics"),
        envelope(PUB + 2, 9, AT, "kv_metrics", active_load(8, 2, decode=3, prefill=300, scope="local")),
        {"publisher_id": PUB + 2, "sequence": 9, "published_at": AT, "worker_id": 8, "dp_rank": 2,
         "active_decode_blocks": 3, "active_prefill_tokens": 300, "kv_used_blocks": None})
    return out


def write_samples(d):
    index = []
    for name, subj, frame, expect in samples():
        with open(os.path.join(d, name + ".msgpack"), "wb") as f:
            f.write(frame)
        index.append({"name": name, "subject": subj, "expect": expect})
    with open(os.path.join(d, "samples.json"), "w") as f:
        json.dump({"about": __doc__.strip().splitlines()[0], "samples": index}, f, indent=1)
        f.write("\n")


def sequence_payload(spec):
    """An ActiveSequenceEvent, or with "batch" an ActiveSequenceEventBatch,
    from spec["events"]: each {"op": "add" | "free" | "mark",
    "request_id", "worker", "dp", "router_id", "lora"} and, for "add",
    "tokens" and "block_size" (token_sequence: the prompt's sequence
    hashes, the adapter's seed when "lora" is set, as the worker's KV
    events hash them; "untracked": None), "expected_output_tokens"."""
    events = []
    for ev in spec["events"]:
        op = ev["op"]
        if op == "add":
            hashes = None
            if not ev.get("untracked"):
                hashes = seq_hashes(local_hashes(ev["tokens"], ev["block_size"], ev.get("lora")))
            data = add_request(hashes, expected_output_tokens=ev.get("expected_output_tokens"))
        else:
            data = {"free": "Free", "mark": "MarkPrefillCompleted"}[op]
        events.append(sequence_event(ev["request_id"], ev["worker"], ev.get("dp", 0), data,
                                     router_id=ev.get("router_id", 1), lora_name=ev.get("lora")))
    if spec.get("batch"):
        return pack({"events": events})
    if len(events) != 1:
        raise ValueError("a frame without batch holds one event")
    return pack(events[0])


def frame(spec):
    """One frame from a JSON spec: kind "kv" (worker, event_id, dp, tier,
    tokens, block_size, lora, salt, parent_tokens (blocks already stored
    before), external hashes derived from local ones), "load", or
    "sequence" (see sequence_payload)."""
    if spec["kind"] == "sequence":
        return envelope(spec["publisher"], spec["sequence"], spec.get("published_at", AT),
                        "active_sequences_events", sequence_payload(spec))
    if spec["kind"] == "load":
        payload = active_load(spec["worker"], spec.get("dp", 0), decode=spec.get("decode"),
                              prefill=spec.get("prefill"), used=spec.get("used"))
        topic = "kv_metrics"
    else:
        lh = local_hashes(spec["tokens"], spec["block_size"], spec.get("lora"), spec.get("salt"))
        skip = spec.get("skip_blocks", 0)
        ext = [(h ^ 0x5A5A5A5A5A5A5A5A) for h in lh]  # the engine's own hashes: any distinct values
        parent = ext[skip - 1] if skip else None
        data = stored_data(list(zip(ext[skip:], lh[skip:])), parent=parent)
        payload = router_event(spec["worker"], spec["event_id"], data, dp_rank=spec.get("dp", 0),
                               tier=spec.get("tier", "device"))
        topic = "kv-events"
    return envelope(spec["publisher"], spec["sequence"], spec.get("published_at", AT), topic, payload)


if __name__ == "__main__":
    if sys.argv[1:2] == ["samples"]:
        write_samples(sys.argv[2])
    elif sys.argv[1:2] == ["sequences"]:
        write_sequences(sys.argv[2])
    elif sys.argv[1:2] == ["frame"]:
        sys.stdout.buffer.write(frame(json.load(sys.stdin)))
    elif sys.argv[1:2] == ["frames"]:
        out = []
        for sp in json.load(sys.stdin):
            topic = {"load": "kv_metrics", "sequence": "active_sequences_events"}.get(sp["kind"], "kv-events")
            out.append({"subject": subject(sp["namespace"], sp["component"], topic, sp.get("endpoint")),
                        "hex": frame(sp).hex()})
        json.dump(out, sys.stdout)
    else:
        sys.exit(__doc__)
