package schemas

//msgp:limit arrays:4194304 maps:4096

// ActiveLoad is a worker's load report on kv.load.<worker_id>, with the
// field names of Dynamo's ActiveLoad. The counters are optional there (a
// worker reports only kv_used_blocks, a scheduler only the active ones), so
// they are pointers here: nil and null both mean "not reported".
type ActiveLoad struct {
	WorkerID            uint64  `msg:"worker_id" json:"worker_id"`
	DpRank              uint32  `msg:"dp_rank" json:"dp_rank"`
	ActiveDecodeBlocks  *uint64 `msg:"active_decode_blocks" json:"active_decode_blocks"`
	ActivePrefillTokens *uint64 `msg:"active_prefill_tokens" json:"active_prefill_tokens"`
	KvUsedBlocks        *uint64 `msg:"kv_used_blocks" json:"kv_used_blocks"`
}

// DecodeBlocks returns active_decode_blocks, 0 when not reported.
func (l ActiveLoad) DecodeBlocks() uint64 { return deref(l.ActiveDecodeBlocks) }

// PrefillTokens returns active_prefill_tokens, 0 when not reported.
func (l ActiveLoad) PrefillTokens() uint64 { return deref(l.ActivePrefillTokens) }

// UsedBlocks returns kv_used_blocks, 0 when not reported.
func (l ActiveLoad) UsedBlocks() uint64 { return deref(l.KvUsedBlocks) }

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
