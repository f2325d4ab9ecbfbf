#!/usr/bin/python3
"""Reference model of today's Dynamo KV router's worker choice, for parity tests.

Written from ai-dynamo/dynamo's Rust source, not from hintstream's Go code:

  hashing      lib/kv-router/src/protocols.rs compute_block_hash_for_seq
               (commit 038eab23a6b6e9b6391de6640f4f69d4c2726681) with the
               block seed of lib/kv-hashing/src/salt.rs compute_salt_hash:
               1337 + xxh3_64(lora_name, 0) + xxh3_64(cache_salt, 1),
               wrapping, empty = absent; sequence hashes are not needed,
               the indexers below key on (parent external hash, local hash)
  device tier  a per-worker radix walk from the root over local hashes, as
               RadixTree::find_matches for prefix-closed workers
  lower tiers  lib/kv-router/src/indexer/lower_tier.rs LowerTierIndexer
               (commit 514be2b3a2b1fcf748d1e79c83b187e55e49230a; edges
               (parent external hash, local hash) -> child) and
               query_lower_tiers in lower_tier_indexers.rs (commit
               1783f723be1af5717830f460651d23eb75595009): continuations
               seeded from the device match, host_pinned, disk, external in
               turn, root workers added from the root
  tier counts  lib/kv-router/src/scheduling/overlap.rs
               (commit 13a4eeab3ff95e09dfa58402a063e9b0f0ac4bcd):
               cache_hit_estimates_from_tiered_matches and
               tier_overlap_blocks_from_tiered_matches (external -> disk)
  cost         lib/kv-router/src/scheduling/selector/default.rs
               DefaultWorkerScorer::worker_logit and selector/mod.rs
               WorkerSelectionInput::row
               (commit 07a6c9ce3bb096cfaf353fe69ee578e105c6a512)

What Dynamo's router sees and a stream processor cannot is fixed the same
way on both sides and said here: the request's new blocks
(additional_active_blocks) are all isl // block_size full blocks; every
candidate has a load entry (a worker without a report has zeros, as the
router's own tracker would); active_requests is 0 unless given; no shared
cache. Exact ties: Dynamo picks at random; this model reports how many
candidates tie and picks among them by hintstream's documented rule
(longest device overlap, then lowest worker id, then lowest dp rank).

Input: a JSON file, one case per line:
  {"config": {...KvRouterConfig fields...}, "block_size": 16,
   "tokens": [...], "lora_name": "", "cache_salt": "",
   "workers": [{"worker_id": 1, "dp_rank": 0, "ext_base": 123,
                "load": null | {"active_prefill_tokens": n,
                                "active_decode_blocks": n},
                "stores": [{"tier": "device"|"host_pinned"|"disk"|"external",
                            "from": i, "to": j,
                            "lora_name": "", "cache_salt": ""}]}]}
A store holds the prompt's blocks [from, to) hashed with its own seed; the
external hash of block i is ext_base + i and its parent ext_base + i - 1
(none for block 0).
Output: one JSON line per case:
  {"worker_id", "dp_rank", "cost", "ties", "device", "host", "disk"}
"""

import json
import math
import struct
import sys

import xxhash

MASK = (1 << 64) - 1
XXH3_SEED = 1337
LOWER_TIERS = ("host_pinned", "disk", "external")

DEFAULTS = {
    "overlap_score_credit": 1.0,
    "overlap_score_credit_decay": 0.0,
    "prefill_load_scale": 1.0,
    "decode_active_request_weight": 0.0,
    "host_cache_hit_weight": 0.75,
    "disk_cache_hit_weight": 0.25,
}


def block_seed(lora_name, cache_salt):
    seed = XXH3_SEED
    if lora_name:
        seed = (seed + xxhash.xxh3_64_intdigest(lora_name.encode(), seed=0)) & MASK
    if cache_salt:
        seed = (seed + xxhash.xxh3_64_intdigest(cache_salt.encode(), seed=1)) & MASK
    return seed


def local_hashes(tokens, bs, seed):
    out = []
    for start in range(0, len(tokens) - bs + 1, bs):
        chunk = tokens[start:start + bs]
        out.append(xxhash.xxh3_64_intdigest(struct.pack("<%dI" % bs, *chunk), seed=seed))
    return out


def rust_round(x):
    # f64::round: half away from zero (Python's round() is half to even).
    return math.copysign(math.floor(abs(x) + 0.5), x)


class Worker:
    def __init__(self, w, tokens, bs, hash_cache):
        self.key = (w["worker_id"], w["dp_rank"])
        self.load = w.get("load") or {}
        base = w["ext_base"]
        # tier -> {(parent_ext, local): child_ext}
        self.edges = {t: {} for t in ("device",) + LOWER_TIERS}
        for s in w.get("stores") or []:
            seed = block_seed(s.get("lora_name", ""), s.get("cache_salt", ""))
            if seed not in hash_cache:
                hash_cache[seed] = local_hashes(tokens, bs, seed)
            local = hash_cache[seed]
            edges = self.edges[s["tier"]]
            for i in range(s["from"], s["to"]):
                parent = None if i == 0 else base + i - 1
                key = (parent, local[i])
                # LowerTierIndexer: the existing mapping wins.
                edges.setdefault(key, base + i)

    def walk(self, tier, local, pos, last):
        """Consecutive hits on tier from pos after external hash last."""
        edges = self.edges[tier]
        start = pos
        while pos < len(local):
            child = edges.get((last, local[pos]))
            if child is None:
                break
            last = child
            pos += 1
        return pos - start, pos, last


def choose(case):
    cfg = dict(DEFAULTS)
    cfg.update(case.get("config") or {})
    bs = case["block_size"]
    tokens = case["tokens"]
    isl = len(tokens)
    hash_cache = {}
    req_seed = block_seed(case.get("lora_name", ""), case.get("cache_salt", ""))
    hash_cache[req_seed] = local_hashes(tokens, bs, req_seed)
    req = hash_cache[req_seed]
    workers = [Worker(w, tokens, bs, hash_cache) for w in case["workers"]]

    rows = []
    for w in workers:
        # Device: from the root.
        d, pos, last = w.walk("device", req, 0, None)
        # Lower tiers: one continuation per worker, host, disk, external.
        hits = {}
        for tier in LOWER_TIERS:
            # A worker with no match so far continues from the root, which
            # finds something only if it is one of the tier's root workers.
            h, p2, l2 = w.walk(tier, req, pos, last)
            hits[tier] = h
            if h > 0:
                pos, last = p2, l2
        rows.append((w, d, hits))

    # overlap.rs: effective blocks (device weight 1), cached tokens.
    weight = {"host_pinned": cfg["host_cache_hit_weight"],
              "disk": cfg["disk_cache_hit_weight"],
              "external": cfg["disk_cache_hit_weight"]}
    track = []
    for w, d, hits in rows:
        eff = float(d)
        for tier in LOWER_TIERS:
            if weight[tier] == 0.0 or hits[tier] == 0:
                continue
            eff += hits[tier] * weight[tier]
        cached = int(max(rust_round(eff * bs), 0.0))
        host = hits["host_pinned"]
        disk = hits["disk"] + hits["external"]
        track.append((w, d, host, disk, cached))

    min_active = 0
    if cfg["overlap_score_credit_decay"] > 0.0 and track:
        min_active = min(t[0].load.get("active_prefill_tokens", 0) for t in track)
    request_blocks = -(-isl // bs)

    best = None
    costs = []
    for w, d, host, disk, cached in track:
        active = w.load.get("active_prefill_tokens", 0)
        uncached = isl - min(cached, isl)
        raw_tokens = active + uncached + cached
        raw_prefill_blocks = raw_tokens / bs
        decay = 1.0
        if cfg["overlap_score_credit_decay"] > 0.0:
            excess = (active - min(active, min_active)) / bs
            normalized = excess / request_blocks if request_blocks else (math.inf if excess else 0.0)
            decay = 1.0 / (1.0 + cfg["overlap_score_credit_decay"] * normalized)
        credit = (cfg["overlap_score_credit"] * decay) * d \
            + cfg["host_cache_hit_weight"] * host \
            + cfg["disk_cache_hit_weight"] * disk
        decode = float(w.load.get("active_decode_blocks", 0) + isl // bs)
        active_request_cost = cfg["decode_active_request_weight"] * w.load.get("active_requests", 0)
        adjusted = max(raw_prefill_blocks - credit, 0.0)
        cost = cfg["prefill_load_scale"] * adjusted + decode + active_request_cost
        costs.append(cost)
        rank = (cost, -d, w.key[0], w.key[1])
        if best is None or rank < best[0]:
            best = (rank, w, d, host, disk)
    if best is None:
        return {"none": True}
    ties = sum(1 for c in costs if c == best[0][0])
    _, w, d, host, disk = best
    return {"worker_id": w.key[0], "dp_rank": w.key[1], "cost": best[0][0], "ties": ties,
            "device": d, "host": host, "disk": disk}


def main():
    with open(sys.argv[1]) as f:
        out = sys.stdout
        for line in f:
            line = line.strip()
            if line:
                out.write(json.dumps(choose(json.loads(line))) + "\n")


if __name__ == "__main__":
    main()
