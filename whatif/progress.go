package whatif

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws a bar with an ETA, at most a few times a second.
type progress struct {
	w     io.Writer
	total int
	start time.Time
	mu    sync.Mutex // runs report concurrently
	done  int
	last  time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: max(total, 1), start: time.Now()}
}

// add counts events played and redraws the bar.
func (p *progress) add(events int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += events
	done := p.done
	if time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	f := min(max(float64(done)/float64(p.total), 0), 1)
	const width = 30
	n := int(f * width)
	eta := "?"
	if el := time.Since(p.start); f > 0.001 {
		eta = (time.Duration(float64(el)/f) - el).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\rwhatif [%s%s] %3.0f%% ETA %-8s", strings.Repeat("#", n), strings.Repeat(".", width-n), f*100, eta)
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "\rwhatif: done in %v%40s\n", time.Since(p.start).Round(time.Millisecond), "")
}
