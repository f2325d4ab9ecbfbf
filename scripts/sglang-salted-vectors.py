#!/usr/bin/env python3
"""Write testdata/sglang/salted_pages.json: SGLang HiCache storage page hashes
and Mooncake object keys for requests with and without a cache namespace.

Written from SGLang's source, not from hintstream's Go:

- storage_namespace_seed(extra_key, cache_salt), get_storage_hash_str and
  compute_node_hash_values in python/sglang/srt/mem_cache/utils.py (the
  seeding merged by SGLang PR #38577): a new chain starts from
  SHA-256(b"sglang-cache-namespace-v1" || part(extra_key) || part(cache_salt))
  where part(None) = 0x00 and part(s) = 0x01 || u64le(len(utf8(s))) || utf8(s);
  no namespace at all (both None) leaves the chain unseeded.
- the page chain of python/sglang/srt/mem_cache/cpp_utils/hash_binding.cpp
  (hash_pages_to_hex_blob): page i = SHA-256(prior digest || u32le tokens of
  page i), the prior digest being the seed's 32 bytes for page 0.
- extra_key is the request's extra_key with lora_id appended
  (python/sglang/srt/managers/schedule_batch.py, Req.__init__).
- object key = key_prefix + "_" + page_hash + suffix, per pool and suffix,
  a trailing_pages pool covering only its last N full pages (the rule of
  the shared vectors sglang_pages_and_keys.json).

Only full pages are hashed, as HiCache only stores full pages. Standard
library only (hashlib, json, random). Run from the repository root:

    /usr/bin/python3 scripts/sglang-salted-vectors.py

The output is deterministic (seeded random), so a second run writes the
same bytes; TestSGLangSaltedVectorsCurrent checks the committed file is
what this script writes.
"""

import hashlib
import json
import random
import sys

OUT = "testdata/sglang/salted_pages.json"


def namespace_seed(extra_key, cache_salt):
    if extra_key is None and cache_salt is None:
        return None
    d = hashlib.sha256(b"sglang-cache-namespace-v1")
    for part in (extra_key, cache_salt):
        if part is None:
            d.update(b"\x00")
            continue
        enc = part.encode("utf-8")
        d.update(b"\x01" + len(enc).to_bytes(8, "little") + enc)
    return d.hexdigest()


def page_hashes(tokens, page_size, seed_hex):
    prior = bytes.fromhex(seed_hex) if seed_hex else b""
    out = []
    for start in range(0, len(tokens) // page_size * page_size, page_size):
        h = hashlib.sha256()
        h.update(prior)
        for t in tokens[start:start + page_size]:
            h.update(t.to_bytes(4, "little", signed=False))
        prior = h.digest()
        out.append(h.hexdigest())
    return out


def object_keys(layout, hashes):
    hl = layout["hicache_object_layout"]
    keys = []
    for pool in hl["pools"]:
        first = 0
        if pool.get("hit_policy") == "trailing_pages":
            first = max(len(hashes) - pool["trailing_pages"], 0)
        for h in hashes[first:]:
            for suf in pool["suffixes"]:
                keys.append(hl["key_prefix"] + "_" + h + suf)
    return keys


MHA = {"backend": "mooncake", "page_size": 16, "hicache_object_layout": {
    "key_prefix": "prod_Qwen-Qwen3-8B", "is_mla_backend": False, "pp_rank": 0, "pp_size": 1,
    "pools": [{"pool": "kv", "suffixes": ["_0_k", "_0_v"], "hit_policy": "all_pages"}]}}
HYBRID = {"backend": "mooncake", "page_size": 8, "hicache_object_layout": {
    "key_prefix": "mamba_Qwen-Qwen3-Next", "is_mla_backend": False, "pp_rank": 0, "pp_size": 1,
    "pools": [{"pool": "kv", "suffixes": ["_0_k", "_0_v"], "hit_policy": "all_pages"},
              {"pool": "mamba", "suffixes": [".mamba"], "hit_policy": "trailing_pages", "trailing_pages": 1}]}}


def main():
    rng = random.Random(46)
    namespaces = [
        (None, None),
        (None, "tenant-a"),
        ("lora-7", None),
        ("lora-7", "tenant-a"),
        ("tenant-a", "lora-7"),          # the parts swapped: other keys
        ("ab", "c"), ("a", "bc"),        # the same bytes joined: other keys
        (None, "sel\u00e9\u4e2d\U0001f600"),  # multi-byte UTF-8
        ("x" * 300, "y" * 70),
    ]
    cases = []
    for i, (extra, salt) in enumerate(namespaces):
        layout = MHA if i % 2 == 0 else HYBRID
        ps = layout["page_size"]
        n = ps * rng.randint(1, 4) + rng.randint(0, ps - 1)
        tokens = [rng.randrange(0, 1 << 32) if j % 7 == 0 else rng.randrange(0, 152064) for j in range(n)]
        seed = namespace_seed(extra, salt)
        hashes = page_hashes(tokens, ps, seed)
        cases.append({"name": "case%d" % i, "extra_key": extra, "cache_salt": salt,
                      "namespace_seed": seed, "layout": layout, "tokens": tokens,
                      "page_hashes": hashes, "object_keys": object_keys(layout, hashes)})
    doc = {"about": __doc__.strip().split("\n\n")[0] + " Made by scripts/sglang-salted-vectors.py with "
           "hashlib, from SGLang's python/sglang/srt/mem_cache/utils.py (storage_namespace_seed, "
           "get_storage_hash_str) and cpp_utils/hash_binding.cpp. null = absent (Python None).",
           "cases": cases}
    text = json.dumps(doc, indent=1, ensure_ascii=True) + "\n"
    if len(sys.argv) > 1 and sys.argv[1] == "-":
        sys.stdout.write(text)
        return
    with open(OUT, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
