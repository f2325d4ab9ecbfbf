package agents

// feedback keeps, per workflow type and per tool class, whether each of
// their last prefetches was used, and holds back most prefetches of a
// scope whose recent ones mostly were not: only one in Config.FeedbackKeep
// is sent, so the share keeps being measured and the scope recovers when
// its prefetches start being used again. Bounded: maxScopes scopes, the
// table starting again when full (a scope then measures afresh).
type feedback struct {
	window int
	scopes map[string]*scopeStats
}

const maxScopes = 2048

type scopeStats struct {
	ring      []bool // used?
	next, n   int
	unused    int
	held, all uint64
}

func newFeedback(window int) *feedback {
	return &feedback{window: window, scopes: map[string]*scopeStats{}}
}

func (f *feedback) stats(key string) *scopeStats {
	s := f.scopes[key]
	if s == nil {
		if len(f.scopes) >= maxScopes {
			clear(f.scopes)
		}
		s = &scopeStats{ring: make([]bool, f.window)}
		f.scopes[key] = s
	}
	return s
}

func (f *feedback) add(workflowType, toolClass string, used bool) {
	for _, key := range [...]string{"w:" + workflowType, "t:" + toolClass} {
		if key == "w:" || key == "t:" {
			continue
		}
		s := f.stats(key)
		if s.n == f.window {
			if !s.ring[s.next] {
				s.unused--
			}
		} else {
			s.n++
		}
		s.ring[s.next] = used
		if !used {
			s.unused++
		}
		s.next = (s.next + 1) % f.window
	}
}

// UnusedShare is the share of the scope's recent prefetches not used, and
// how many there were.
func (f *feedback) unusedShare(key string) (float64, int) {
	s := f.scopes[key]
	if s == nil || s.n == 0 {
		return 0, 0
	}
	return float64(s.unused) / float64(s.n), s.n
}

// hold reports whether to hold back a prefetch of these scopes, and
// which scope decided.
func (f *feedback) hold(workflowType, toolClass string, cfg Config) (string, bool) {
	for _, sc := range [...]struct{ key, name string }{{"w:" + workflowType, "workflow_type"}, {"t:" + toolClass, "tool_class"}} {
		if sc.key == "w:" || sc.key == "t:" {
			continue
		}
		share, n := f.unusedShare(sc.key)
		if n < f.window || share <= cfg.FeedbackUnused {
			continue
		}
		s := f.stats(sc.key)
		s.all++
		if s.all%uint64(cfg.FeedbackKeep) != 0 {
			s.held++
			return sc.name, true
		}
	}
	return "", false
}
