package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestAdapterTargetFlags: each prefetch target needs the URL it calls,
// named in the error, and a target the adapter does not know is a usage
// error (exit 2) too.
func TestAdapterTargetFlags(t *testing.T) {
	bind := []string{"adapter", "--bind", "tcp://127.0.0.1:0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"adapter", "--engine", "vllm", "--engine-url", "http://e"}, "--bind is required"},
		{bind, "--engine and --engine-url are required with --prefetch-target engine"},
		{append(bind, "--prefetch-target", "dynamo"), "--frontend-url is required"},
		{append(bind, "--prefetch-target", "lmcache"), "--lmcache-url is required"},
		{append(bind, "--prefetch-target", "lmcache", "--lmcache-url", "http://l", "--engine", "vllm"), "go together"},
		{append(bind, "--prefetch-target", "mooncake", "--engine", "vllm", "--engine-url", "http://e"), `prefetch target "mooncake"`},
		{append(bind, "--prefetch-target", "lmcache", "--lmcache-url", "http://l", "--lmcache-world-size", "-2"), "world size -2"},
	} {
		var out, errb bytes.Buffer
		code := realMain(c.args, &out, &errb)
		if code != 2 || !strings.Contains(out.String()+errb.String(), c.want) {
			t.Errorf("%v: exit %d, output %q; want exit 2 and %q", c.args, code, out.String()+errb.String(), c.want)
		}
	}
}
