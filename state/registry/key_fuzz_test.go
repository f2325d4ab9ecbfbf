package registry

import "testing"

// FuzzParseKey reads a bucket key as a worker id. Property: no panic;
// either an error, or an id whose Key is the key itself (one worker, one
// key: "007" and "+7" are not 7).
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"7", "0", "007", "", "-1", "+7", "18446744073709551615", "18446744073709551616", "7.5", "\xff"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		id, err := parseKey(key)
		if err != nil {
			return
		}
		if Key(id) != key {
			t.Fatalf("key %q read as worker %d (key %q)", key, id, Key(id))
		}
	})
}
