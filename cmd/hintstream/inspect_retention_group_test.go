package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/retention"
	"github.com/hintstream/hintstream/observe"
)

// inspect retention names the group's leader, through the JSON that
// /v1/retention serves.
func TestInspectRetentionShowsLeader(t *testing.T) {
	for _, c := range []struct {
		group *retention.Leadership
		want  string
	}{
		{nil, "group: none"},
		{&retention.Leadership{Member: "a", Leader: "a", Leading: true, Since: time.Unix(1_700_000_000, 0)}, "member a leads"},
		{&retention.Leadership{Member: "b", Leader: "a"}, "member b follows leader a"},
		{&retention.Leadership{Member: "b"}, "no leader seen yet"},
	} {
		body, err := json.Marshal(observe.RetentionView{Stats: retention.Stats{Group: c.group}})
		if err != nil {
			t.Fatal(err)
		}
		var v observe.RetentionView
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		printRetention(&out, v)
		if !strings.Contains(out.String(), c.want) {
			t.Errorf("%+v: output %q lacks %q", c.group, out.String(), c.want)
		}
	}
}
