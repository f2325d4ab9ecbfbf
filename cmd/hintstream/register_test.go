package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRegisterAndSinkFlags: the sidecar and the sink refuse what would
// make a wrong record or no socket, with a message naming the flag and
// exit status 2 (a usage error).
func TestRegisterAndSinkFlags(t *testing.T) {
	base := []string{"register", "--worker-id", "7", "--hint-endpoint", "tcp://10.0.0.7:5570"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"register", "--hint-endpoint", "tcp://h:1", "--model", "m", "--kv-block-size", "16"}, 2, "--worker-id is required"},
		{[]string{"register", "--worker-id", "7", "--model", "m", "--kv-block-size", "16"}, 2, "--hint-endpoint is required"},
		{base, 2, "--model and --kv-block-size are required"},
		{append(base, "--model", "m", "--kv-block-size", "16", "--interval", "10ms"), 2, "--interval 10ms"},
		{append(base, "--model", "m", "--kv-block-size", "0"), 2, "--kv-block-size are required"},
		{[]string{"register", "--worker-id", "7", "--hint-endpoint", "http://h:1", "--model", "m", "--kv-block-size", "16", "--check-config"}, 2, "not a tcp://"},
		{append(base, "--model", "m", "--kv-block-size", "16", "--check-config"), 0, "configuration ok"},
		{append(base, "--sglang-url", "http://127.0.0.1:30000", "--check-config"), 0, "configuration ok"},
		{[]string{"sink"}, 2, "--bind is required"},
		{[]string{"sink", "--bind", "tcp://127.0.0.1:0", "--dedup-window", "0"}, 2, "dedup window"},
	} {
		var out, errb bytes.Buffer
		code := realMain(c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String()+errb.String(), c.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", c.args, code, out.String()+errb.String(), c.code, c.want)
		}
	}
}
