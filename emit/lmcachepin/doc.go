// Package lmcachepin keeps hintstream's tool-call pins in LMCache, the KV
// cache layer Dynamo and llm-d deploy with vLLM, through the LMCache
// controller's HTTP API (lmcache_controller, FastAPI app in
// lmcache/v1/api_server/__main__.py at
// 958d8ce4cd478b639e83f770735577487e221839):
//
//	POST /pin {"instance_id": str, "location": str, "tokens": [int]}
//	  -> 200 {"event_id": str, "num_tokens": int}
//
// The controller hands the pin to every worker of the instance
// (PinWorkerMsg, lmcache/v1/cache_controller/executor.py at
// 594faea5d63132523327b704d0223dd8d46f1364), which pins the chunks of
// tokens it holds in location (LMCacheEngine.lookup(..., pin=True),
// lmcache/v1/cache_controller/worker.py at
// 3bafe17fbd0b153a56d6507e264d74097f0e8cc1). An instance the controller
// does not know is a 500 with the error as detail; a body FastAPI cannot
// validate (a missing field, a wrong type) a 422.
//
// The API has no TTL and no unpin: /clear empties a whole location of an
// instance, which is no release, and the project's examples list unpin
// as unsupported. What ends a pin is LMCache's PinMonitor
// (lmcache/v1/pin_monitor.py at 22cf7c874a5d3f3d7f057a7cb923800682780827):
// it force-unpins an object pinned longer than pin_timeout_sec (default
// 300 s) since its last pin, and a pin again restarts that count. So
// hintstream owns the TTL: a Holder pins a tool call's tokens, pins them
// again every Config.Repin (below pin_timeout_sec) until the pin's
// deadline, and lets go on the session's next turn (Release) or at the
// deadline (lapsed), after which LMCache drops the pin within
// pin_timeout_sec. Each held pin is kept in a JetStream KV bucket with
// its deadline (Store), so a restarted hintstream resumes the pins still
// due and forgets the lapsed ones; no pin outlives hintstream by more
// than pin_timeout_sec, which the deployment sets.
//
// Calls are made with adapter.Caller, as the adapter's engine calls:
// bounded in time, retried after a 5xx or no connection only until the
// pin's deadline (or its next re-pin), counted by outcome.
package lmcachepin
