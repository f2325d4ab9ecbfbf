package schemas

import (
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// extra_key is read from both encodings, on the fast JSON path and
// through encoding/json alike, and absent stays empty.
func TestRequestExtraKey(t *testing.T) {
	var l Limits
	for _, data := range []string{
		`{"request_id":"r","token_ids":[1,2],"cache_salt":"s","extra_key":"k1"}`,
		`{"request_id":"r","extra_key":"k\u0031","cache_salt":"s"}`, // an escape: encoding/json's path
	} {
		ev, err := l.DecodeRequest([]byte(data), "")
		if err != nil || ev.ExtraKey != "k1" || ev.CacheSalt != "s" {
			t.Fatalf("%s: %+v, %v", data, ev, err)
		}
	}
	b := msgp.AppendMapHeader(nil, 2)
	b = msgp.AppendString(msgp.AppendString(b, "request_id"), "r")
	b = msgp.AppendString(msgp.AppendString(b, "extra_key"), "k1")
	ev, err := l.DecodeRequest(b, "")
	if err != nil || ev.ExtraKey != "k1" {
		t.Fatalf("msgpack: %+v, %v", ev, err)
	}
	if ev, err := l.DecodeRequest([]byte(`{"request_id":"r"}`), ""); err != nil || ev.ExtraKey != "" {
		t.Fatalf("absent: %+v, %v", ev, err)
	}
}
