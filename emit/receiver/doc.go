// Package receiver is the reference receiving end of hintstream's hints:
// what a worker's scheduler (kv.prefetch) or the Mooncake master (kv.pin)
// runs behind its PULL socket. It binds the socket (optionally as a CURVE
// server), decodes every KvHintsEnvelope as strictly as the msgspec
// structs on the Python side do, drops repeated message ids within a
// bounded window and prefetches past their expires_at_ms (both counted),
// and hands each kv.prefetch and kv.pin action to a callback.
//
// `hintstream sink --bind tcp://…` runs one and prints a JSON line per
// hint; contrib/python/hintstream_receiver.py is the same receiver for a
// Python scheduler.
package receiver
