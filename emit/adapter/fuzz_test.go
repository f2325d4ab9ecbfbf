package adapter

import (
	"encoding/json"
	"testing"
)

// FuzzChatWarmUp: a conversation's chat request comes from outside
// (Dynamo's request trace); whatever it holds, chatWarmUp returns an
// error or a JSON object that asks for one non-streamed token, names no
// output bound but max_tokens, asks for no speculative prefill of its
// own, and keeps the messages it was given.
func FuzzChatWarmUp(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`), "")
	f.Add([]byte(`{"model":"m","messages":[],"max_completion_tokens":9,"n":2,"stream":true,"stream_options":{}}`), "salt")
	f.Add([]byte(`{"messages":[1],"nvext":{"agent_hints":{"speculative_prefill":true},"cache_salt":"a"}}`), "b")
	f.Add([]byte(`{"messages":[],"nvext":null}`), "s")
	f.Add([]byte(`{"messages":[],"nvext":{"agent_hints":7}}`), "")
	f.Add([]byte(`[1,2]`), "")
	f.Fuzz(func(t *testing.T, body []byte, salt string) {
		out, err := chatWarmUp(body, salt)
		if err != nil {
			return
		}
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("output is no JSON object: %v\n%s", err, out)
		}
		if string(got["max_tokens"]) != "1" || string(got["stream"]) != "false" {
			t.Fatalf("max_tokens %s stream %s", got["max_tokens"], got["stream"])
		}
		for _, k := range []string{"max_completion_tokens", "n", "stream_options"} {
			if _, ok := got[k]; ok {
				t.Fatalf("%s kept", k)
			}
		}
		var in map[string]json.RawMessage
		_ = json.Unmarshal(body, &in)
		var msgsIn, msgsOut any
		_ = json.Unmarshal(in["messages"], &msgsIn)
		_ = json.Unmarshal(got["messages"], &msgsOut)
		if b1, _ := json.Marshal(msgsIn); string(b1) != func() string { b2, _ := json.Marshal(msgsOut); return string(b2) }() {
			t.Fatalf("messages changed")
		}
		var nv struct {
			AgentHints map[string]json.RawMessage `json:"agent_hints"`
		}
		if raw, ok := got["nvext"]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &nv); err != nil {
				t.Fatalf("nvext: %v", err)
			}
			if _, ok := nv.AgentHints["speculative_prefill"]; ok {
				t.Fatal("speculative_prefill kept")
			}
		}
	})
}
