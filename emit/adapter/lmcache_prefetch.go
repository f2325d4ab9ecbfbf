package adapter

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// lmcachePrefetch is the body of LMCache's multi-process server
// POST /l2/prefetch, PrefetchRequest in
// lmcache/v1/multiprocess/http_apis/l2_api.py (LMCache/LMCache; the
// index's version that holds prefetch_to_l1 records no commit: the
// versions at c92d4c0a7cf787110332cf46a2fc550aa93fdd71 and
// 000e8777a114b0f687cbdc8d06d075886de6895a predate the route). A plain
// dataclass that FastAPI validates (422 on a missing field or a type that
// does not coerce; unknown members are ignored):
//   - model_name: str and world_size: int select the KV layout the engine
//     registered on this node: 409 until the model has allocated its KV
//     cache there; world_size is the engine's tensor-parallel size;
//   - token_ids: list[int], at most 1,000,000 (_MAX_PREFETCH_TOKENS; 400
//     past it), hashed by the server into chunk keys as the lookup path
//     does, so the caller never names a key;
//   - cache_salt: str (default ""), part of every key: a salted prompt's
//     chunks are found only under its salt. IPCCacheServerKey refuses
//     '@', '/', '\' or NUL in it, or more than 128 characters (400).
//
// It answers 202 {"request_id", "chunks", "status": "submitted"} at once
// and loads in the storage manager's thread (unlocked: the chunks become
// plain evictable L1 entries), or 202 {"chunks": 0, "status": "noop"} when
// the prompt is shorter than one chunk. Nobody needs the request_id: the
// engine's connector finds the chunks in L1 at the turn whether or not
// anyone polls GET /l2/prefetch/{request_id}, and a poll would only hold
// a call slot.
type lmcachePrefetch struct {
	ModelName string   `json:"model_name"`
	WorldSize int      `json:"world_size"`
	TokenIDs  []uint32 `json:"token_ids"`
	CacheSalt string   `json:"cache_salt"`
}

// LMCache's bounds on a prefetch (l2_api.py, custom_types.py): a request
// past them is refused with 400, so the adapter does not send it.
const (
	lmcacheMaxPrefetchTokens = 1_000_000
	lmcacheMaxSalt           = 128
	lmcacheSaltForbidden     = "@/\\\x00"
)

// lmcacheCall is the /l2/prefetch call for w at base, the LMCache
// server's HTTP base URL.
func lmcacheCall(base string, worldSize int, w warmUp) (call, error) {
	switch {
	case len(w.tokens) > lmcacheMaxPrefetchTokens:
		return call{}, fmt.Errorf("adapter: %d tokens, LMCache prefetches at most %d", len(w.tokens), lmcacheMaxPrefetchTokens)
	case utf8.RuneCountInString(w.cacheSalt) > lmcacheMaxSalt: // Python's len: characters
		return call{}, fmt.Errorf("adapter: cache_salt of %d characters, LMCache takes at most %d", utf8.RuneCountInString(w.cacheSalt), lmcacheMaxSalt)
	case strings.ContainsAny(w.cacheSalt, lmcacheSaltForbidden):
		return call{}, fmt.Errorf("adapter: cache_salt %q holds a character LMCache refuses (@ / \\ NUL)", w.cacheSalt)
	}
	b, err := json.Marshal(lmcachePrefetch{ModelName: w.model, WorldSize: worldSize, TokenIDs: w.tokens, CacheSalt: w.cacheSalt})
	return call{target: TargetLMCache, url: base + "/l2/prefetch", body: b}, err
}
