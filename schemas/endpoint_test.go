package schemas

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestCheckEndpoint(t *testing.T) {
	long := "tcp://" + strings.Repeat("a", 10<<10) + ":1"
	cases := []struct {
		ep, reason string
		ipc        bool
	}{
		{ep: "tcp://10.0.0.7:5570"},
		{ep: "tcp://127.0.0.1:1"},
		{ep: "tcp://127.0.0.1:65535"},
		{ep: "tcp://worker-7.pool.svc.cluster.local:5570"},
		{ep: "tcp://worker-7.:5570"},
		{ep: "tcp://sched_1:5570"},
		{ep: "tcp://[fd00::7]:5570"},
		{ep: "tcp://[::1]:5570"},
		{ep: "ipc:///run/sched1.sock", ipc: true},
		{ep: "inproc://rank2", reason: ReasonInproc},
		{ep: "inproc://rank2", reason: ReasonInproc, ipc: true},
		{ep: "ipc:///run/sched1.sock", reason: ReasonIPCNotAllowed},
		{ep: "ipc://", reason: ReasonBadHost, ipc: true},
		{ep: "tcp://127.0.0.1:99999", reason: ReasonBadPort},
		{ep: "tcp://127.0.0.1:0", reason: ReasonBadPort},
		{ep: "tcp://127.0.0.1:+80", reason: ReasonBadPort},
		{ep: "tcp://127.0.0.1:", reason: ReasonBadPort},
		{ep: "tcp://127.0.0.1:*", reason: ReasonBadPort},
		{ep: "tcp://127.0.0.1", reason: ReasonBadPort},
		{ep: "tcp://", reason: ReasonBadPort},
		{ep: "tcp://0.0.0.0:1", reason: ReasonWildcardHost},
		{ep: "tcp://*:5570", reason: ReasonWildcardHost},
		{ep: "tcp://[::]:5570", reason: ReasonWildcardHost},
		{ep: "tcp://:::5570", reason: ReasonWildcardHost},
		{ep: "tcp://[::ffff:0.0.0.0]:5570", reason: ReasonWildcardHost},
		{ep: "tcp://fd00::7:5570", reason: ReasonBadHost},
		{ep: "tcp://[10.0.0.7]:5570", reason: ReasonBadHost},
		{ep: "tcp://:5570", reason: ReasonBadHost},
		{ep: "tcp://eth0;10.0.0.7:5570", reason: ReasonBadHost},
		{ep: "tcp://a..b:5570", reason: ReasonBadHost},
		{ep: "tcp://h\x00st:5570", reason: ReasonBadHost},
		{ep: long, reason: ReasonEndpointTooLong},
		{ep: "tcp://" + strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 52) + ":65535"}, // 256 bytes
		{ep: "tcp://" + strings.Repeat(strings.Repeat("a", 63)+".", 3) + strings.Repeat("b", 53) + ":65535", reason: ReasonEndpointTooLong},
		{ep: "http://10.0.0.7:5570", reason: ReasonBadScheme},
		{ep: "TCP://h:1", reason: ReasonBadScheme},
		{ep: "10.0.0.7:5570", reason: ReasonBadScheme},
		{ep: "", reason: ReasonBadScheme},
	}
	for _, c := range cases {
		got, why := EndpointRules{AllowIPC: c.ipc}.CheckEndpoint(c.ep)
		if got != c.reason {
			t.Errorf("%.60q (ipc %v): reason %q (%s), want %q", c.ep, c.ipc, got, why, c.reason)
		}
	}
}

func TestValidateRefusalReasons(t *testing.T) {
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("tcp://10.0.0.7:%d", 5000+i)
	}
	for _, c := range []struct {
		rules  EndpointRules
		eps    []string
		reason string
	}{
		{eps: many, reason: ""}, // 1,001 under the default 1,024
		{rules: EndpointRules{MaxDPRanks: 1000}, eps: many, reason: ReasonTooManyEndpoints},
		{eps: append(make([]string, 0, 1025), append(many, many[:24]...)...), reason: ReasonTooManyEndpoints},
		{eps: []string{"tcp://h:1", "inproc://x"}, reason: ReasonInproc},
		{eps: []string{"tcp://" + strings.Repeat("x", 250) + ":1"}, reason: ReasonEndpointTooLong},
	} {
		w := WorkerRecord{WorkerID: 3, KvBlockSize: 16, HintEndpoints: c.eps}
		err := w.ValidateWith(c.rules)
		var re *RecordError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%d endpoints: %v", len(c.eps), err)
		case c.reason != "" && (!errors.As(err, &re) || re.Reason != c.reason):
			t.Errorf("%d endpoints: %v, want reason %q", len(c.eps), err, c.reason)
		case re != nil && len(re.Error()) > 200:
			t.Errorf("error quotes too much input: %d bytes", len(re.Error()))
		}
	}
	// Through the decoder, the reason survives as the DecodeError's cause.
	_, err := Limits{}.DecodeWorkerRecord([]byte(`{"worker_id":3,"kv_block_size":16,"hint_endpoints":["inproc://x"]}`))
	var re *RecordError
	if !errors.Is(err, ErrMalformed) || !errors.As(err, &re) || re.Reason != ReasonInproc {
		t.Fatalf("decode inproc record: %v", err)
	}
	if _, err := (Limits{}).DecodeWorkerRecordWith([]byte(`{"worker_id":3,"kv_block_size":16,"hint_endpoints":["ipc:///s"]}`),
		EndpointRules{AllowIPC: true}); err != nil {
		t.Fatalf("ipc record with AllowIPC: %v", err)
	}
}

// FuzzCheckEndpoint: any string gets an answer without a panic, refusals
// use a known reason, and what is accepted is a tcp:// (or, when allowed,
// ipc://) endpoint within MaxEndpointLen whose port is in 1..65535.
func FuzzCheckEndpoint(f *testing.F) {
	for _, s := range []string{"tcp://10.0.0.7:5570", "tcp://[::1]:1", "ipc:///x", "inproc://x", "tcp://*:1",
		"tcp://0.0.0.0:1", "tcp://h:99999", "tcp://h:0", "tcp://a;b:1", "tcp://[::]:1"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	known := map[string]bool{ReasonEndpointTooLong: true, ReasonInproc: true, ReasonIPCNotAllowed: true,
		ReasonBadScheme: true, ReasonBadHost: true, ReasonWildcardHost: true, ReasonBadPort: true}
	f.Fuzz(func(t *testing.T, ep string, ipc bool) {
		reason, why := EndpointRules{AllowIPC: ipc}.CheckEndpoint(ep)
		if reason != "" {
			if !known[reason] || why == "" {
				t.Fatalf("%q: reason %q (%q)", ep, reason, why)
			}
			return
		}
		if len(ep) > MaxEndpointLen {
			t.Fatalf("accepted %d bytes", len(ep))
		}
		if strings.HasPrefix(ep, "ipc://") {
			if !ipc {
				t.Fatalf("accepted %q without AllowIPC", ep)
			}
			return
		}
		rest, ok := strings.CutPrefix(ep, "tcp://")
		if !ok {
			t.Fatalf("accepted %q", ep)
		}
		i := strings.LastIndexByte(rest, ':')
		host := rest[:i]
		var port int
		if _, err := fmt.Sscanf(rest[i+1:], "%d", &port); err != nil || port < 1 || port > 65535 {
			t.Fatalf("accepted %q: port %q", ep, rest[i+1:])
		}
		if host == "" || host == "*" || host == "0.0.0.0" || host == "[::]" || strings.ContainsAny(host, ";/ \x00") {
			t.Fatalf("accepted %q: host %q", ep, host)
		}
	})
}
