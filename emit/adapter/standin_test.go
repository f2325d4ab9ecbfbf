package adapter

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"
)

// TestStandinsRejectWhatEnginesReject: the stand-ins the adapter is
// tested against are strict where the engines are: a test passing
// against them says the adapter's bodies fit the schemas.
func TestStandinsRejectWhatEnginesReject(t *testing.T) {
	sg := engine(t, "--engine", "sglang")
	vl := engine(t, "--engine", "vllm", "--model", model)
	setPrio := func(extra string) string {
		return `{"model":"` + model + `","prompt":[1,2],"max_tokens":1,"kv_hints":{"protocol_version":"0.1","message_id":"m",` +
			`"actions":[{"action_id":"a","action_type":"vllm.set_priority","action_version":"1.0","payload":{` +
			`"target":"request_cached","location":"local_g1","claim_id":"c","revision":1,"value":5` + extra + `}}]}}`
	}
	for _, c := range []struct {
		name, url, path, body string
		status                int
	}{
		{"sglang ok", sg.URL, "/generate", `{"input_ids":[1,2,3],"sampling_params":{"max_new_tokens":1}}`, 200},
		{"sglang unknown sampling param", sg.URL, "/generate", `{"input_ids":[1],"sampling_params":{"max_tokens":1}}`, 400},
		{"sglang no input", sg.URL, "/generate", `{"sampling_params":{"max_new_tokens":1}}`, 400},
		{"sglang token as string", sg.URL, "/generate", `{"input_ids":["1"]}`, 400},
		{"sglang priority as string", sg.URL, "/generate", `{"input_ids":[1],"priority":"low"}`, 400},
		{"sglang salted", sg.URL, "/generate", `{"input_ids":[1],"sampling_params":{"max_new_tokens":1},"cache_salt":"t"}`, 200},
		{"sglang salt as number", sg.URL, "/generate", `{"input_ids":[1],"cache_salt":7}`, 400},
		{"vllm salt as number", vl.URL, "/v1/completions", `{"model":"` + model + `","prompt":[1],"max_tokens":1,"cache_salt":7}`, 400},
		{"vllm ok", vl.URL, "/v1/completions", setPrio(`,"ttl_seconds":60.0`), 200},
		{"vllm int ttl", vl.URL, "/v1/completions", setPrio(`,"ttl_seconds":60`), 200},
		{"vllm missing model", vl.URL, "/v1/completions", `{"prompt":[1],"max_tokens":1}`, 400},
		{"vllm unknown model", vl.URL, "/v1/completions", `{"model":"x","prompt":[1],"max_tokens":1}`, 404},
		{"vllm negative token", vl.URL, "/v1/completions", `{"model":"` + model + `","prompt":[-1],"max_tokens":1}`, 400},
		{"vllm priority without policy", vl.URL, "/v1/completions", `{"model":"` + model + `","prompt":[1],"priority":5}`, 400},
		{"set_priority unknown field", vl.URL, "/v1/completions", setPrio(`,"ttl_seconds":60.0,"pin":true`), 400},
		{"set_priority without ttl", vl.URL, "/v1/completions", setPrio(``), 400},
		{"set_priority zero ttl", vl.URL, "/v1/completions", setPrio(`,"ttl_seconds":0`), 400},
	} {
		if got := statusOf(t, c.url+c.path, c.body, nil); got != c.status {
			t.Errorf("%s: status %d, want %d", c.name, got, c.status)
		}
	}
}

// statusOf POSTs the JSON body to url with header and returns the
// answer's status.
func statusOf(t *testing.T, url, body string, header map[string]string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
