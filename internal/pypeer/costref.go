package pypeer

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

//go:embed dynamo_cost.py
var costScript []byte

// CostCase is one worker choice for dynamo_cost.py, the reference model
// of Dynamo's router written from its Rust source (see the script's
// docstring for the rules and commits it follows).
type CostCase struct {
	Config    map[string]float64 `json:"config"`
	BlockSize int                `json:"block_size"`
	Tokens    []uint32           `json:"tokens"`
	LoraName  string             `json:"lora_name,omitempty"`
	CacheSalt string             `json:"cache_salt,omitempty"`
	Workers   []CostWorker       `json:"workers"`
}

// CostWorker is one (worker, dp rank) candidate: its load report (nil: it
// never reported) and the prompt blocks it holds, per store.
type CostWorker struct {
	WorkerID uint64      `json:"worker_id"`
	DpRank   uint32      `json:"dp_rank"`
	ExtBase  uint64      `json:"ext_base"` // external hash of block i: ExtBase + i
	Load     *CostLoad   `json:"load"`
	Stores   []CostStore `json:"stores"`
}

// CostLoad is a load report.
type CostLoad struct {
	ActivePrefillTokens uint64 `json:"active_prefill_tokens"`
	ActiveDecodeBlocks  uint64 `json:"active_decode_blocks"`
}

// CostStore holds the prompt's blocks [From, To) on Tier ("device",
// "host_pinned", "disk", "external"), hashed with its LoRA name and salt.
type CostStore struct {
	Tier      string `json:"tier"`
	From      int    `json:"from"`
	To        int    `json:"to"`
	LoraName  string `json:"lora_name,omitempty"`
	CacheSalt string `json:"cache_salt,omitempty"`
}

// CostChoice is the reference's answer: the chosen candidate, its cost,
// how many candidates tie at that cost, and its tier counts.
type CostChoice struct {
	None     bool    `json:"none"`
	WorkerID uint64  `json:"worker_id"`
	DpRank   uint32  `json:"dp_rank"`
	Cost     float64 `json:"cost"`
	Ties     int     `json:"ties"`
	Device   int     `json:"device"`
	Host     int     `json:"host"`
	Disk     int     `json:"disk"`
}

// RunCostReference runs dynamo_cost.py over cases with /usr/bin/python3
// (which needs the xxhash module) and returns its answers in order. It
// fails the test, with the script's stderr, if the script fails.
func RunCostReference(t testing.TB, cases []CostCase) []CostChoice {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(dir, "dynamo_cost.py")
	if err := os.WriteFile(script, costScript, 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Create(filepath.Join(dir, "cases.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(in)
	enc := json.NewEncoder(w)
	for _, c := range cases {
		if err := enc.Encode(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	in.Close()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(Python(), script, in.Name())
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dynamo_cost.py: %v\n%s", err, stderr.String())
	}
	out := make([]CostChoice, 0, len(cases))
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c CostChoice
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("dynamo_cost.py output %q: %v", sc.Text(), err)
		}
		out = append(out, c)
	}
	if len(out) != len(cases) {
		t.Fatalf("dynamo_cost.py answered %d of %d cases\n%s", len(out), len(cases), stderr.String())
	}
	return out
}
