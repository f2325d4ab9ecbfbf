package schemas

// RetainPayload is the payload of hintstream.retain@1.0, sent to the worker that
// served a tool-call turn (hintstream run --retain-on-worker): keep the
// session's KV (TokenIDs, the prompt and the response) in the worker's
// own cache for TTLMs milliseconds at Priority (1..100), under ClaimID at
// Revision (a later revision of the claim replaces it). A receiver acts
// on it only until ExpiresAtMs (Unix milliseconds): after that the hint
// is stale, whatever its TTL.
//
// It is encoded by hand (actions.EncodeRetain) and decoded by package
// receiver; its field names are the msgpack keys.
type RetainPayload struct {
	RequestID   string   `json:"request_id"`
	SessionID   string   `json:"session_id"`
	Model       string   `json:"model"`
	TokenIDs    []uint32 `json:"token_ids"`
	DpRank      uint32   `json:"dp_rank"`
	TTLMs       int64    `json:"ttl_ms"`
	Priority    int64    `json:"priority"`
	ClaimID     string   `json:"claim_id"`
	Revision    int64    `json:"revision"`
	ExpiresAtMs int64    `json:"expires_at_ms"`
}
