package streams

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzWorkerFromSubject reads the worker id out of any subject a message
// could arrive on. Property: no panic; either an error, or an id whose
// decimal form is exactly the subject's last token (so one worker has one
// subject), and KVEventSubject/LoadSubject of it read back the same id.
func FuzzWorkerFromSubject(f *testing.F) {
	for _, s := range []string{"kv.events.7", "kv.load.18446744073709551615", "kv.events.18446744073709551616",
		"kv.events.007", "kv.events.", "kv.events.-1", "kv.events.1e3", "7", "", "kv.events.0", "a.b.\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subject string) {
		id, err := WorkerFromSubject(subject)
		if err != nil {
			return
		}
		if last := subject[strings.LastIndexByte(subject, '.')+1:]; last != strconv.FormatUint(id, 10) {
			t.Fatalf("%q read as worker %d", subject, id)
		}
		for _, s := range []string{KVEventSubject(id), LoadSubject(id)} {
			if back, err := WorkerFromSubject(s); err != nil || back != id {
				t.Fatalf("%q: %d, %v; want %d", s, back, err, id)
			}
		}
	})
}
