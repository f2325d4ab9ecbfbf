package observe

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// Limits of POST /v1/overlap. A larger body is 413, more tokens 400.
const (
	MaxOverlapBody   = 16 << 20
	MaxOverlapTokens = 1 << 20
)

// InspectRequestID is the request id /v1/overlap chooses with when the
// body names none; it matters only at temperature > 0, where the draw
// depends on it.
const InspectRequestID = "hintstream-inspect"

// The /v1/ answers. Field names are the JSON API; the CLI decodes them.
type (
	// WorkersView answers GET /v1/workers, in registry order.
	WorkersView struct {
		Workers []WorkerView `json:"workers"`
	}
	// WorkerView is a registry record without its secrets (the CURVE key
	// is only said to be there), with each dp rank's load and staleness.
	WorkerView struct {
		WorkerID        uint64     `json:"worker_id"`
		Model           string     `json:"model"`
		KvBlockSize     uint32     `json:"kv_block_size"`
		HintEndpoints   []string   `json:"hint_endpoints"`
		HasObjectLayout bool       `json:"has_object_layout"`
		HasCurveKey     bool       `json:"has_curve_key"`
		Ranks           []RankView `json:"ranks"`
	}
	// RankView is one dp rank of a worker.
	RankView struct {
		DpRank   uint32   `json:"dp_rank"`
		Endpoint string   `json:"endpoint"`
		Load     LoadView `json:"load"`
		Stale    bool     `json:"stale"`
	}
	// LoadView is the latest load report; null fields were never reported.
	LoadView struct {
		ActiveDecodeBlocks  *uint64 `json:"active_decode_blocks"`
		ActivePrefillTokens *uint64 `json:"active_prefill_tokens"`
		KvUsedBlocks        *uint64 `json:"kv_used_blocks"`
	}
	// WorkerKeyView is a (worker, dp rank).
	WorkerKeyView struct {
		WorkerID uint64 `json:"worker_id"`
		DpRank   uint32 `json:"dp_rank"`
	}
	// IndexView answers GET /v1/index: index.Stats and the stale pairs.
	IndexView struct {
		Workers         int             `json:"workers"`
		DeviceBlocks    int64           `json:"device_blocks"`
		OtherTierBlocks int64           `json:"other_tier_blocks"`
		Hashes          int             `json:"hashes"`
		UnknownParent   uint64          `json:"unknown_parent"`
		UnknownRemovals uint64          `json:"unknown_removals"`
		Cleared         uint64          `json:"cleared"`
		Gaps            uint64          `json:"gaps"`
		OutOfOrder      uint64          `json:"out_of_order"`
		DroppedFull     uint64          `json:"dropped_full"`
		StaleWorkers    []WorkerKeyView `json:"stale_workers"`
		// Complete is false when KV events were removed before this
		// member read them; IncompleteReason says which.
		Complete         bool   `json:"complete"`
		IncompleteReason string `json:"incomplete_reason,omitempty"`
	}
	// OverlapRequest is the body of POST /v1/overlap.
	OverlapRequest struct {
		Model    string   `json:"model"`
		TokenIDs []uint32 `json:"token_ids"`
		// RequestID (default InspectRequestID) seeds the draw at
		// temperature > 0, so a real request's choice can be replayed.
		RequestID string `json:"request_id,omitempty"`
	}
	// OverlapView answers POST /v1/overlap: what the selector would do
	// with the prompt now. Chosen is null, with Reason, when no worker
	// serves the model.
	OverlapView struct {
		Model      string          `json:"model"`
		Tokens     int             `json:"tokens"`
		RequestID  string          `json:"request_id"`
		Chosen     *WorkerKeyView  `json:"chosen"`
		Reason     string          `json:"reason,omitempty"`
		Candidates []CandidateView `json:"candidates"`
	}
	// CandidateView is routing.Candidate.
	CandidateView struct {
		WorkerID      uint64 `json:"worker_id"`
		DpRank        uint32 `json:"dp_rank"`
		Endpoint      string `json:"endpoint"`
		BlockSize     int    `json:"block_size"`
		OverlapBlocks int    `json:"overlap_blocks"`
		// Lower-tier blocks past the device prefix (routing.Candidate).
		HostPinnedBlocks int      `json:"host_pinned_blocks,omitempty"`
		DiskBlocks       int      `json:"disk_blocks,omitempty"`
		ExternalBlocks   int      `json:"external_blocks,omitempty"`
		OverlapCredit    float64  `json:"overlap_credit,omitempty"`
		PrefillBlocks    float64  `json:"prefill_blocks"`
		DecodeBlocks     float64  `json:"decode_blocks"`
		VirtualBlocks    float64  `json:"virtual_blocks"`
		Logit            float64  `json:"logit"`
		Chosen           bool     `json:"chosen"`
		Load             LoadView `json:"load"`
	}
	// ToolTimeView answers GET /v1/tooltime; the any-tool bucket ("") first.
	ToolTimeView struct {
		Tools []ToolView `json:"tools"`
	}
	// ToolView is tooltime.ToolStats, durations in seconds.
	ToolView struct {
		Tool            string  `json:"tool"`
		Samples         int     `json:"samples"`
		P50Seconds      float64 `json:"p50_seconds"`
		P90Seconds      float64 `json:"p90_seconds"`
		EstimateSeconds float64 `json:"estimate_seconds"`
		Source          string  `json:"source"`
	}
	// ErrorView is the body of every /v1/ error.
	ErrorView struct {
		Error string `json:"error"`
	}
)

// registerInspect adds the /v1/ endpoints. Each answers 404 when its
// source is nil and 503 while Ready is false: sources may then read state
// their owner sets up after Start.
func registerInspect(mux *http.ServeMux, s Sources) {
	mux.HandleFunc("GET /v1/workers", s.gate(s.Workers != nil, "worker inspection", s.workersView))
	mux.HandleFunc("GET /v1/index", s.gate(s.Index != nil, "index inspection", s.indexView))
	mux.HandleFunc("POST /v1/overlap", s.gate(s.Choose != nil, "overlap inspection", s.overlapView))
	mux.HandleFunc("GET /v1/tooltime", s.gate(s.ToolTime != nil, "tool time inspection", s.toolTimeView))
	mux.HandleFunc("GET /v1/outcomes", s.gate(s.Outcomes != nil, "outcome inspection", s.outcomesView))
}

// httpError is an error with the status to answer it with.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func (s Sources) gate(on bool, what string, view func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !on {
			writeJSON(w, http.StatusNotFound, ErrorView{what + " is off on this instance"})
			return
		}
		if s.Ready != nil && !s.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, ErrorView{"catching up"})
			return
		}
		v, err := view(r)
		if he := (*httpError)(nil); errors.As(err, &he) {
			writeJSON(w, he.status, ErrorView{he.msg})
			return
		} else if err != nil {
			writeJSON(w, http.StatusInternalServerError, ErrorView{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to tell it
}

func (s Sources) workersView(*http.Request) (any, error) {
	stale := s.staleSet()
	out := WorkersView{Workers: []WorkerView{}}
	for _, rec := range s.Workers() {
		wv := WorkerView{WorkerID: rec.WorkerID, Model: rec.Model, KvBlockSize: rec.KvBlockSize,
			HintEndpoints: rec.HintEndpoints, HasObjectLayout: rec.ObjectLayout != nil,
			HasCurveKey: rec.HintCurvePublicKey != "", Ranks: make([]RankView, len(rec.HintEndpoints))}
		if wv.HintEndpoints == nil {
			wv.HintEndpoints = []string{}
		}
		for i, ep := range rec.HintEndpoints {
			k := kvevents.WorkerKey{WorkerID: rec.WorkerID, DpRank: uint32(i)}
			rv := RankView{DpRank: k.DpRank, Endpoint: ep, Stale: stale[k]}
			if s.Loads != nil {
				rv.Load = loadView(s.Loads(k))
			}
			wv.Ranks[i] = rv
		}
		out.Workers = append(out.Workers, wv)
	}
	return out, nil
}

func (s Sources) staleSet() map[kvevents.WorkerKey]bool {
	m := map[kvevents.WorkerKey]bool{}
	if s.Stale != nil {
		for _, k := range s.Stale() {
			m[k] = true
		}
	}
	return m
}

func loadView(l schemas.ActiveLoad) LoadView {
	return LoadView{ActiveDecodeBlocks: l.ActiveDecodeBlocks, ActivePrefillTokens: l.ActivePrefillTokens,
		KvUsedBlocks: l.KvUsedBlocks}
}

func (s Sources) indexView(*http.Request) (any, error) {
	st := s.Index()
	v := IndexView{Workers: st.Workers, DeviceBlocks: st.DeviceBlocks, OtherTierBlocks: st.OtherTierBlocks,
		Hashes: st.Hashes, UnknownParent: st.UnknownParent, UnknownRemovals: st.UnknownRemovals,
		Cleared: st.Cleared, Gaps: st.Gaps, OutOfOrder: st.OutOfOrder, DroppedFull: st.DroppedFull,
		StaleWorkers: []WorkerKeyView{}, Complete: true}
	if s.IndexComplete != nil {
		v.Complete, v.IncompleteReason = s.IndexComplete()
	}
	if s.Stale != nil {
		for _, k := range s.Stale() {
			v.StaleWorkers = append(v.StaleWorkers, WorkerKeyView{k.WorkerID, k.DpRank})
		}
	}
	return v, nil
}

func (s Sources) overlapView(r *http.Request) (any, error) {
	var req OverlapRequest
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, MaxOverlapBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return nil, &httpError{http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxOverlapBody)}
		}
		return nil, &httpError{http.StatusBadRequest, "bad body: " + err.Error()}
	}
	if dec.More() {
		return nil, &httpError{http.StatusBadRequest, "bad body: more than one JSON value"}
	}
	if len(req.TokenIDs) > MaxOverlapTokens {
		return nil, &httpError{http.StatusBadRequest, fmt.Sprintf("%d tokens: at most %d", len(req.TokenIDs), MaxOverlapTokens)}
	}
	if req.RequestID == "" {
		req.RequestID = InspectRequestID
	}
	chosen, cands, err := s.Choose(&schemas.RequestEvent{RequestID: req.RequestID, Model: req.Model, TokenIDs: req.TokenIDs})
	out := OverlapView{Model: req.Model, Tokens: len(req.TokenIDs), RequestID: req.RequestID,
		Candidates: make([]CandidateView, len(cands))}
	switch {
	case errors.Is(err, routing.ErrNoWorker):
		out.Reason = err.Error()
	case err != nil:
		return nil, err
	default:
		out.Chosen = &WorkerKeyView{chosen.Worker.WorkerID, chosen.Worker.DpRank}
	}
	for i, c := range cands {
		out.Candidates[i] = CandidateView{WorkerID: c.Worker.WorkerID, DpRank: c.Worker.DpRank, Endpoint: c.Endpoint,
			BlockSize: c.BlockSize, OverlapBlocks: c.Overlap, PrefillBlocks: c.PrefillBlocks,
			HostPinnedBlocks: c.HostPinned, DiskBlocks: c.Disk, ExternalBlocks: c.External, OverlapCredit: c.OverlapCredit,
			DecodeBlocks: c.DecodeBlocks, VirtualBlocks: c.VirtualBlocks, Logit: c.Logit,
			Chosen: err == nil && c.Worker == chosen.Worker, Load: loadView(c.Load)}
	}
	return out, nil
}

func (s Sources) toolTimeView(*http.Request) (any, error) {
	stats, ok := s.ToolTime()
	if !ok {
		return nil, &httpError{http.StatusNotFound, "tool-call pins are off on this instance: no tool times are learned"}
	}
	out := ToolTimeView{Tools: make([]ToolView, len(stats))}
	for i, st := range stats {
		out.Tools[i] = ToolView{Tool: st.Tool, Samples: st.Samples, P50Seconds: seconds(st.P50),
			P90Seconds: seconds(st.P90), EstimateSeconds: seconds(st.Estimate), Source: st.Source.String()}
	}
	return out, nil
}

func seconds(d time.Duration) float64 { return d.Seconds() }
