package speed

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/loadtest/hdr"
	zmq "github.com/pebbe/zmq4"
)

// recorder matches hints to wake-ups and times them.
type recorder struct {
	prefix      string
	total, warm int
	sched       func(int) time.Time
	sent        atomic.Int64
	all         chan struct{}

	mu                          sync.Mutex
	seen                        []bool
	received, measured, dups    int
	hist, sendLag               *hdr.Histogram
	firstMeasured, lastMeasured time.Time
}

func newRecorder(runID string, total, warm int) *recorder {
	return &recorder{prefix: runID + "-", total: total, warm: warm, all: make(chan struct{}),
		seen: make([]bool, total), hist: hdr.New(), sendLag: hdr.New()}
}

// hint handles one received envelope, t being its receipt time.
func (r *recorder) hint(b []byte, t time.Time) {
	rid, ok := hintRequestID(b)
	if !ok {
		return
	}
	id, ok := strings.CutPrefix(rid, r.prefix)
	i, err := strconv.Atoi(id)
	if !ok || err != nil || i < 0 || i >= r.total {
		return // another run's
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[i] {
		r.dups++
		return
	}
	r.seen[i] = true
	r.received++
	if i >= r.warm {
		r.hist.Record(t.Sub(r.sched(i)))
		if r.measured == 0 {
			r.firstMeasured = t
		}
		r.measured++
		r.lastMeasured = t
	}
	if r.received == r.total {
		close(r.all)
	}
}

func (r *recorder) snapshot() (sent int64, received int, p99 time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent.Load(), r.received, r.hist.ValueAtQuantile(0.99)
}

func (r *recorder) result() LatencyResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, lag := hdr.New(), hdr.New()
	h.Merge(r.hist)
	lag.Merge(r.sendLag)
	sent := r.total - r.warm
	res := LatencyResult{Sent: sent, Received: r.measured, Lost: sent - r.measured, Duplicates: r.dups,
		P50: h.ValueAtQuantile(0.5), P99: h.ValueAtQuantile(0.99), P999: h.ValueAtQuantile(0.999),
		Mean: h.Mean(), Max: h.Max(), Latency: h, SendLag: lag}
	if el := r.lastMeasured.Sub(r.firstMeasured).Seconds(); el > 0 {
		res.RecvRate = float64(r.measured-1) / el
	}
	return res
}

// receivers are the PULL sockets standing in for workers' schedulers.
type receivers struct {
	endpoints []string
	quit      chan struct{}
	wg        sync.WaitGroup
}

func startReceivers(n int, rec *recorder) (*receivers, error) {
	rs := &receivers{quit: make(chan struct{})}
	for range n {
		s, err := zmq.NewSocket(zmq.PULL)
		if err != nil {
			rs.stop()
			return nil, err
		}
		ep, err := bindPull(s)
		if err != nil {
			s.Close()
			rs.stop()
			return nil, err
		}
		rs.endpoints = append(rs.endpoints, ep)
		rs.wg.Add(1)
		go func() {
			defer rs.wg.Done()
			defer s.Close()
			for {
				select {
				case <-rs.quit:
					return
				default:
				}
				b, err := s.RecvBytes(0)
				if err != nil {
					if zmq.AsErrno(err) == zmq.ETERM {
						return
					}
					continue // EAGAIN: the receive timeout, to notice quit
				}
				rec.hint(b, time.Now())
			}
		}()
	}
	return rs, nil
}

func bindPull(s *zmq.Socket) (string, error) {
	if err := s.SetRcvtimeo(50 * time.Millisecond); err != nil {
		return "", err
	}
	if err := s.SetLinger(0); err != nil {
		return "", err
	}
	if err := s.SetRcvhwm(100000); err != nil {
		return "", err
	}
	if err := s.Bind("tcp://127.0.0.1:*"); err != nil {
		return "", err
	}
	return s.GetLastEndpoint()
}

func (rs *receivers) stop() {
	close(rs.quit)
	rs.wg.Wait()
}
