package metrics

import (
	"sync"
	"testing"
)

func TestCountersAndGauges(t *testing.T) {
	var c Counters
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				c.IncLabel("hints.dropped", "expired")
			}
		}()
	}
	wg.Wait()
	if c.Get("hints.dropped") != 8000 || c.Get("hints.dropped|expired") != 8000 {
		t.Fatalf("counts: %v", c.Snapshot(""))
	}
	c.Set("tooltime.expected_ms|search", 9000)
	c.Set("tooltime.expected_ms|search", 4000)
	if c.Get("tooltime.expected_ms|search") != 4000 {
		t.Fatal("a gauge must take its latest value")
	}
	if got := c.Names("hints."); len(got) != 2 || got[0] != "hints.dropped" {
		t.Fatalf("names %v", got)
	}
	if c.Get("never") != 0 {
		t.Fatal("unknown counter not zero")
	}
}
