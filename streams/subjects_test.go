package streams

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestModelToken(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Qwen/Qwen3-8B", "Qwen/Qwen3-8B"},
		{"meta-llama/Llama-3.1 8B", "meta-llama/Llama-3_1_8B"},
		{"", "_"},
		{"a.b.c", "a_b_c"},
		{"a*b>c", "a_b_c"},
		{"tab\there\nnl\r", "tab_here_nl_"},
		{"nbsp\u00a0ideo\u3000", "nbsp_ideo_"},
		{"ctl\x00\x7f", "ctl__"},
		{"bad\xffutf8", "bad_utf8"},
		{"ünïcødé/模型", "ünïcødé/模型"},
		{">", "_"},
	} {
		if got := ModelToken(tc.in); got != tc.want {
			t.Errorf("ModelToken(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSubjectBuilders(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{RequestSubject("meta-llama/Llama-3.1 8B"), "llm.requests.meta-llama/Llama-3_1_8B"},
		{ResponseSubject("Qwen/Qwen3-8B"), "llm.responses.Qwen/Qwen3-8B"},
		{RequestSubject(""), "llm.requests._"},
		{KVEventSubject(7), "kv.events.7"},
		{LoadSubject(math.MaxUint64), "kv.load.18446744073709551615"},
		{DeadLetterSubject("request"), "hintstream.dlq.request"},
		{DeadLetterSubject("a.b"), "hintstream.dlq.a_b"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
		if err := validSubject(tc.got); err != nil {
			t.Errorf("%q is not a valid subject: %v", tc.got, err)
		}
	}
	// Every built subject lies inside its default stream.
	set := DefaultSet()
	for _, tc := range []struct{ subj, stream string }{
		{RequestSubject("x.y"), set.Requests.Subjects[0]},
		{ResponseSubject("x y"), set.Responses.Subjects[0]},
		{KVEventSubject(1), set.KVEvents.Subjects[0]},
		{LoadSubject(1), set.Load.Subjects[0]},
		{DeadLetterSubject("load"), set.DeadLetter.Subjects[0]},
	} {
		if !covers(tc.stream, tc.subj) {
			t.Errorf("%q not captured by %q", tc.subj, tc.stream)
		}
	}
}

func TestWorkerFromSubject(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr string
	}{
		{"kv.events.7", 7, ""},
		{"kv.load.0", 0, ""},
		{"kv.events.18446744073709551615", math.MaxUint64, ""},
		{KVEventSubject(123456789), 123456789, ""},
		{"dynamo.kv.events.42", 42, ""},
		{"kv.events.18446744073709551616", 0, "64 bits"},
		{"kv.events.abc", 0, "not a decimal"},
		{"kv.events.-1", 0, "not a decimal"},
		{"kv.events.+1", 0, "not a decimal"},
		{"kv.events.0x1f", 0, "not a decimal"},
		{"kv.events.007", 0, "leading zeros"},
		{"kv.events.", 0, "empty"},
		{"kv.events.>", 0, "not a decimal"},
		{"7", 0, "no worker id token"},
		{"", 0, "no worker id token"},
	} {
		got, err := WorkerFromSubject(tc.in)
		if tc.wantErr == "" {
			if err != nil || got != tc.want {
				t.Errorf("WorkerFromSubject(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), strconv.Quote(tc.in)) {
			t.Errorf("WorkerFromSubject(%q) error = %v; want one naming the subject and containing %q", tc.in, err, tc.wantErr)
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		pattern, sub string
		want         bool
	}{
		{"llm.requests.>", "llm.requests.>", true},
		{"llm.>", "llm.requests.>", true},
		{">", "kv.events.>", true},
		{"llm.>", "llm", false},
		{"llm.*", "llm.a", true},
		{"llm.*", "llm.*", true},
		{"llm.*", "llm.>", false},
		{"llm.*", "llm.a.b", false},
		{"llm.*.x", "llm.a.x", true},
		{"llm.*.x", "llm.a.y", false},
		{"llm.a", "llm.*", false},
		{"llm.requests.>", "llm.>", false},
		{"llm.requests.>", "llm.responses.>", false},
		{"llm.requests", "llm.requests", true},
		{"llm.requests", "llm.requests.x", false},
		{"llm.requests.x", "llm.requests", false},
	} {
		if got := covers(tc.pattern, tc.sub); got != tc.want {
			t.Errorf("covers(%q, %q) = %v, want %v", tc.pattern, tc.sub, got, tc.want)
		}
	}
}

func TestValidSubject(t *testing.T) {
	for _, s := range []string{"a", "a.b", "a.*", "a.>", ">", "a.*.c", "Qwen/Qwen3-8B"} {
		if err := validSubject(s); err != nil {
			t.Errorf("validSubject(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", ".a", "a.", "a..b", "a.>.b", "a b", "a.b*", "a.>x", "a\t"} {
		if err := validSubject(s); err == nil {
			t.Errorf("validSubject(%q) accepted", s)
		}
	}
}

// A frontend that keeps the dots of "Qwen/Qwen2.5-7B" in its subject
// publishes on three tokens; a member serving the model reads that
// subject as well as the documented one.
func TestModelSubjectsBothSpellings(t *testing.T) {
	for _, tc := range []struct {
		model string
		want  []string
	}{
		{"Qwen/Qwen2.5-7B", []string{"llm.requests.Qwen/Qwen2_5-7B", "llm.requests.Qwen/Qwen2.5-7B"}},
		{"Qwen/Qwen3-8B", []string{"llm.requests.Qwen/Qwen3-8B"}},
		{"a..b", []string{"llm.requests.a__b"}},
		{"x.*", []string{"llm.requests.x__"}},
		{"my model", []string{"llm.requests.my_model"}},
		{"", []string{"llm.requests._"}},
	} {
		if got := ModelSubjects(RequestPrefix, tc.model); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.model, got, tc.want)
		}
	}
}
