package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// TestRetentionAndReplicaFlagBounds: run refuses a requests or responses
// max age below --request-index-ttl, a replica count past the server's
// limit, and a negative --kv-events-keep, naming the flag.
func TestRetentionAndReplicaFlagBounds(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" if accepted
	}{
		{[]string{"--requests-max-age", "1h"}, ""},
		{[]string{"--requests-max-age", "0"}, ""},
		{[]string{"--requests-max-age", "30m"}, "--requests-max-age 30m0s is below --request-index-ttl"},
		{[]string{"--requests-max-age", "5h", "--responses-max-age", "3h", "--request-index-ttl", "4h"}, "--responses-max-age 3h0m0s is below --request-index-ttl"},
		{[]string{"--stream-replicas", "3", "--stream-placement-tags", "az:a,ssd"}, ""},
		{[]string{"--stream-replicas", "6"}, "replicas must be 1..5"},
		{[]string{"--kv-events-keep", "-1s"}, "--kv-events-keep must not be negative"},
		{[]string{"--models", "a,b"}, ""},
	} {
		out, err := exec.Command(binary, append(append([]string{"run"}, tc.args...), "--check-config")...).CombinedOutput()
		switch {
		case tc.err == "" && (err != nil || !strings.Contains(string(out), "configuration ok")):
			t.Errorf("%v: %v\n%s", tc.args, err, out)
		case tc.err != "" && (err == nil || !strings.Contains(string(out), tc.err)):
			t.Errorf("%v: want an error naming %q, got %v\n%s", tc.args, tc.err, err, out)
		}
	}
}

// TestStreamsCreateRetentionDescribe: `streams create` applies the
// retention flags to the streams it creates, and `streams describe`
// shows each stream's limits, current size and whether hintstream owns it.
func TestStreamsCreateRetentionDescribe(t *testing.T) {
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	url := s.ClientURL()
	if _, errOut, code := streamsRun(t, url, "create", "--requests-max-age", "3h", "--requests-max-bytes", "1000000",
		"--stream-replicas", "1"); code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(20*time.Second))
	defer cancel()
	for range 3 {
		if _, err := js.Publish(ctx, "llm.requests.m", []byte(`{"request_id":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := streamsRun(t, url, "describe")
	if code != 0 {
		t.Fatalf("describe: %s", errOut)
	}
	for _, want := range []string{"max_age 3h0m0s, max_bytes 1000000", "max_age 2h0m0s, max_bytes unlimited", "3 messages, ", "created by hintstream"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = streamsRun(t, url, "--json", "describe")
	var doc struct {
		Streams []struct {
			Name     string `json:"name"`
			MaxAge   int64  `json:"max_age_ns"`
			MaxBytes int64  `json:"max_bytes"`
			Bytes    uint64 `json:"bytes"`
			Replicas int    `json:"replicas"`
			Ours     bool   `json:"created_by_hintstream"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Streams) == 0 {
		t.Fatalf("describe --json: %v\n%s", err, out)
	}
	r := doc.Streams[0]
	if r.Name != "LLM_REQUESTS" || r.MaxAge != int64(3*time.Hour) || r.MaxBytes != 1000000 || r.Bytes == 0 || r.Replicas != 1 || !r.Ours {
		t.Fatalf("requests stream: %+v", r)
	}
	if _, errOut, code := streamsRun(t, url, "create", "--stream-replicas", "9"); code == 0 || !strings.Contains(errOut, "replicas must be 1..5") {
		t.Fatalf("create with 9 replicas: code %d\n%s", code, errOut)
	}
}
