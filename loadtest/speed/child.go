package speed

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// child is a measured program: its output lines are kept (the last
// tailLines) and copied to log, and it is ready once a line holds its
// marker.
type child struct {
	cmd   *exec.Cmd
	ready chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	tail  []string
	// watch: substring → when a line first held it (zero until then).
	watch map[string]time.Time
	seen  chan struct{} // signalled on each watched line
}

const tailLines = 40

// startChild starts bin and waits until it prints marker. The first
// time a line holds one of watch is kept for waitLine.
func startChild(bin string, args []string, marker string, log io.Writer, within time.Duration, watch ...string) (*child, error) {
	c := &child{cmd: exec.Command(bin, args...), ready: make(chan struct{}), done: make(chan struct{}),
		watch: map[string]time.Time{}, seen: make(chan struct{}, 1)}
	for _, w := range watch {
		c.watch[w] = time.Time{}
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("speed: start %s: %w", bin, err)
	}
	var once sync.Once
	var wg sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				at := time.Now()
				line := sc.Text()
				c.mu.Lock()
				for w, t := range c.watch {
					if t.IsZero() && strings.Contains(line, w) {
						c.watch[w] = at
						select {
						case c.seen <- struct{}{}:
						default:
						}
					}
				}
				if c.tail = append(c.tail, line); len(c.tail) > tailLines {
					c.tail = c.tail[1:]
				}
				if log != nil {
					fmt.Fprintln(log, line)
				}
				c.mu.Unlock()
				if strings.Contains(line, marker) {
					once.Do(func() { close(c.ready) })
				}
			}
		}()
	}
	go func() { wg.Wait(); _ = c.cmd.Wait(); close(c.done) }()
	select {
	case <-c.ready:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("speed: %s exited before %q:\n%s", bin, marker, c.lastLines())
	case <-time.After(within):
		c.stop()
		return nil, fmt.Errorf("speed: %s printed no %q within %v:\n%s", bin, marker, within, c.lastLines())
	}
}

// waitLine returns when a line first held w (one of startChild's watch),
// waiting up to within.
func (c *child) waitLine(w string, within time.Duration) (time.Time, error) {
	deadline := time.After(within)
	for {
		c.mu.Lock()
		at := c.watch[w]
		c.mu.Unlock()
		if !at.IsZero() {
			return at, nil
		}
		select {
		case <-c.seen:
		case <-c.done:
			return time.Time{}, fmt.Errorf("speed: exited before printing %q:\n%s", w, c.lastLines())
		case <-deadline:
			return time.Time{}, fmt.Errorf("speed: no %q within %v:\n%s", w, within, c.lastLines())
		}
	}
}

func (c *child) lastLines() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.tail, "\n")
}

// stop interrupts the program and waits for it, killing it after 10 s.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(os.Interrupt)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// scrape reads hintstream's /metrics into name{labels} → value for the
// families whose names start with one of prefixes.
func scrape(ctx context.Context, client *http.Client, addr string, prefixes ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	// Plain text: gzip would cost the measured process CPU on every scrape.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("speed: /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		keep := false
		for _, p := range prefixes {
			keep = keep || strings.HasPrefix(line, p)
		}
		i := strings.LastIndexByte(line, ' ')
		if !keep || i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// sumFamily adds every series of one metric family.
func sumFamily(m map[string]float64, family string) float64 {
	var s float64
	for k, v := range m {
		if k == family || strings.HasPrefix(k, family+"{") {
			s += v
		}
	}
	return s
}

// cpuProfile saves a CPU profile of seconds from a child serving pprof.
func cpuProfile(ctx context.Context, addr string, seconds int, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, seconds), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("speed: pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
