// Package metrics holds hintstream's in-process counters. Names are
// dotted ("requests.malformed"); a reason or endpoint is a label appended
// after '|' so one family can be listed together.
package metrics

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Counters is a set of named monotonic counters, safe for concurrent use.
// The zero value is ready to use.
type Counters struct {
	m sync.Map // string -> *atomic.Uint64
}

// Add adds n to the counter name.
func (c *Counters) Add(name string, n uint64) {
	v, ok := c.m.Load(name)
	if !ok {
		v, _ = c.m.LoadOrStore(name, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(n)
}

// Inc adds one to the counter name.
func (c *Counters) Inc(name string) { c.Add(name, 1) }

// IncLabel adds one to name and to name|label.
func (c *Counters) IncLabel(name, label string) {
	c.Inc(name)
	c.Inc(name + "|" + label)
}

// Get returns the counter's value, 0 when never incremented.
func (c *Counters) Get(name string) uint64 {
	if v, ok := c.m.Load(name); ok {
		return v.(*atomic.Uint64).Load()
	}
	return 0
}

// Snapshot returns every counter whose name starts with prefix.
func (c *Counters) Snapshot(prefix string) map[string]uint64 {
	out := map[string]uint64{}
	c.m.Range(func(k, v any) bool {
		if name := k.(string); strings.HasPrefix(name, prefix) {
			out[name] = v.(*atomic.Uint64).Load()
		}
		return true
	})
	return out
}

// Names returns the counter names starting with prefix, sorted.
func (c *Counters) Names(prefix string) []string {
	var names []string
	for k := range c.Snapshot(prefix) {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Set stores v as the value of name: a gauge, for values that go down as
// well as up (a learned tool time, a queue depth).
func (c *Counters) Set(name string, v uint64) {
	g, ok := c.m.Load(name)
	if !ok {
		g, _ = c.m.LoadOrStore(name, new(atomic.Uint64))
	}
	g.(*atomic.Uint64).Store(v)
}
