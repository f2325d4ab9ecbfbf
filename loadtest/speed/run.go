package speed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// loadModel is hintstream's model in a run: its workers serve it and its
// wake-ups name it. A floor's wake-ups name a model of their own
// (floorModel), so programs sharing a run never read each other's.
const loadModel = "loadtest"

func floorModel(k int) string { return loadModel + "-floor" + strconv.Itoa(k) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// tick is one scheduled wake-up: due at this offset from the run's
// start, the n-th of its side's.
type tick struct {
	at   time.Duration
	side int
	n    int
}

// schedule lays out per wake-ups for each of sides programs, one every
// period. A single program takes every tick; two or more take turns:
// slice of ticks for the first, gap without any, slice for the second,
// and so on round, a side dropping out once it has its per.
func schedule(sides, per int, period, slice, gap time.Duration) []tick {
	out := make([]tick, 0, sides*per)
	counts := make([]int, sides)
	turn := slice + gap
	for k := 0; len(out) < sides*per; k++ {
		at := time.Duration(k) * period
		s := 0
		if sides > 1 {
			phase := at % (time.Duration(sides) * turn)
			if s = int(phase / turn); phase-time.Duration(s)*turn >= slice {
				continue // a gap
			}
		}
		if counts[s] == per {
			continue
		}
		out = append(out, tick{at: at, side: s, n: counts[s]})
		counts[s]++
	}
	return out
}

// side is one program of a run and what measures it.
type side struct {
	prog      Program
	subject   string
	templates []template
	rec       *recorder
	recv      *receivers
	proc      *child
	httpAddr  string
	warm      int
	pubErrs   atomic.Int64

	// Its turns (the measured part of each): the time spent in them.
	open            bool
	turnTime        time.Duration
	turnStart, last time.Time
	// CPU from its first measured send to the end of the drain.
	measuring bool
	cpu0      time.Duration
}

type template struct {
	event schemas.RequestEvent
	requestTemplate
}

// send notes a measured wake-up sent at now, opening a turn.
func (s *side) send(now time.Time) {
	if !s.measuring {
		s.measuring, s.cpu0 = true, cpuTime(s.proc.cmd.Process.Pid)
	}
	if !s.open {
		s.open, s.turnStart = true, now
	}
	s.last = now
}

// endTurn closes the side's turn, if one is open: called at the next
// side's first send, or at the end of the drain.
func (s *side) endTurn(period time.Duration) {
	if s.open {
		s.open = false
		s.turnTime += s.last.Sub(s.turnStart) + period
	}
}

// runPrograms is one run of progs on the bus at url: each program
// started, then one publish schedule (see schedule) serving them all.
func runPrograms(ctx context.Context, cfg LatencyConfig, url string, progs []Program) ([]LatencyResult, error) {
	began := time.Now()
	nc, err := nats.Connect(url, nats.Name("hintstream-speed"))
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	sides := make([]*side, len(progs))
	bySubject := map[string]*side{}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, _ error) {
		if s := bySubject[m.Subject]; s != nil {
			s.pubErrs.Add(1)
		}
	}))
	if err != nil {
		return nil, err
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet(), streams.WithLogger(quiet)); err != nil {
		return nil, err
	}
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	warm := int(cfg.Rate * cfg.Warmup.Seconds())
	per := warm + int(cfg.Rate*cfg.Duration.Seconds())
	period := time.Duration(float64(time.Second) / cfg.Rate)
	ticks := schedule(len(progs), per, period, cfg.Slice, cfg.Gap)
	prompts := makePrompts(cfg.Sessions, cfg.PromptTokens)
	headers := map[string]string{"x-dynamo-experimental-wakeup": "1"}

	for k, p := range progs {
		id := runID + "s" + strconv.Itoa(k)
		sd := &side{prog: p, warm: warm, rec: newRecorder(id, per, warm)}
		sides[k] = sd
		model := loadModel
		if p.Target == TargetFloor {
			model = floorModel(k)
		}
		sd.subject = streams.RequestSubject(model)
		bySubject[sd.subject] = sd
		sockets := 1
		if p.Target == TargetHintstream {
			sockets = cfg.Workers
		}
		if sd.recv, err = startReceivers(sockets, sd.rec); err != nil {
			return nil, err
		}
		defer sd.recv.stop()
		var args []string
		var marker string
		switch p.Target {
		case TargetHintstream:
			if err := registerWorkers(ctx, js, sd.recv.endpoints, prompts); err != nil {
				return nil, err
			}
			if sd.httpAddr, err = freeAddr(); err != nil {
				return nil, err
			}
			args = []string{"run", "--nats-url", url, "--group", "speed-" + id, "--http-addr", sd.httpAddr,
				"--snapshot-interval", "0", "--models", loadModel}
			if p.CPUProfile != "" {
				args = append(args, "--pprof")
			}
			marker = "hintstream running"
			defer deleteConsumer(js, "LLM_REQUESTS", "speed-"+id+"-requests")
		case TargetFloor:
			args = []string{"--nats-url", url, "--endpoint", sd.recv.endpoints[0], "--durable", "floor-" + id,
				"--subject", sd.subject}
			marker = "floor: consuming"
			defer deleteConsumer(js, "LLM_REQUESTS", "floor-"+id)
		}
		sd.templates = make([]template, len(prompts))
		for s, pr := range prompts {
			t := &sd.templates[s]
			t.event = schemas.RequestEvent{SessionID: "s" + strconv.Itoa(s), Model: model, TokenIDs: pr, Headers: headers}
			if t.requestTemplate, err = newRequestTemplate(t.event); err != nil {
				return nil, err
			}
		}
		if sd.proc, err = startChild(p.Binary, append(args, p.ExtraArgs...), marker, p.ChildLog, time.Minute); err != nil {
			return nil, err
		}
		defer sd.proc.stop()
	}

	// The schedule: each wake-up is due at start + its offset, whatever
	// happened to the ones before it.
	start := time.Now().Add(20 * time.Millisecond)
	dues := make([][]time.Time, len(sides))
	for k := range sides {
		dues[k] = make([]time.Time, per)
	}
	for _, tk := range ticks {
		dues[tk.side][tk.n] = start.Add(tk.at)
	}
	for k, sd := range sides {
		d := dues[k]
		sd.rec.mu.Lock()
		sd.rec.sched = func(i int) time.Time { return d[i] }
		sd.rec.mu.Unlock()
	}
	total := (cfg.Warmup + cfg.Duration) * time.Duration(len(sides))
	stopProgress := progress(cfg.Progress, cfg.ProgressEvery, func(el time.Duration) string {
		var b []string
		for _, sd := range sides {
			sent, got, p99 := sd.rec.snapshot()
			b = append(b, fmt.Sprintf("latency %s: sent %d received %d p99 %v", sd.prog.Target, sent, got,
				p99.Round(time.Microsecond)))
		}
		return fmt.Sprintf("%4.1fs/%.0fs ", el.Seconds(), total.Seconds()) + strings.Join(b, "; ")
	})
	defer stopProgress()
	profErrs := startProfiles(ctx, sides, ticks, start)

	cur := -1
	for _, tk := range ticks {
		due := start.Add(tk.at)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sleepUntil(due)
		now := time.Now()
		if tk.side != cur {
			if cur >= 0 {
				sides[cur].endTurn(period)
			}
			cur = tk.side
		}
		sd := sides[tk.side]
		if tk.n >= sd.warm {
			sd.rec.sendLag.Record(now.Sub(due))
			sd.send(now)
		}
		id := sd.rec.prefix + strconv.Itoa(tk.n)
		t := &sd.templates[tk.n%len(sd.templates)]
		var body []byte
		if cfg.JSON {
			ev := t.event
			ev.RequestID, ev.ReceivedAtMs = id, due.UnixMilli()
			if body, err = json.Marshal(&ev); err != nil {
				return nil, err
			}
		} else {
			body = t.encode(id, due.UnixMilli())
		}
		if _, err := js.PublishAsync(sd.subject, body); err != nil {
			sd.pubErrs.Add(1)
		}
		sd.rec.sent.Add(1)
	}
	if err := drain(ctx, sides, cfg.Drain); err != nil {
		return nil, err
	}
	out := make([]LatencyResult, len(sides))
	for k, sd := range sides {
		sd.endTurn(period)
		res := sd.rec.result()
		res.Target, res.Rate, res.PublishErrors = sd.prog.Target, cfg.Rate, sd.pubErrs.Load()
		if cpu := cpuTime(sd.proc.cmd.Process.Pid) - sd.cpu0; res.Sent > 0 && sd.measuring && cpu > 0 {
			res.CPUPerWakeup = cpu / time.Duration(res.Sent)
		}
		if sd.turnTime > 0 {
			res.SendRate = float64(res.Sent) / sd.turnTime.Seconds()
		}
		if ch := profErrs[k]; ch != nil {
			if err := <-ch; err != nil {
				return nil, fmt.Errorf("speed: CPU profile: %w", err)
			}
			res.CPUProfile = sd.prog.CPUProfile
		}
		if sd.httpAddr != "" {
			c := &http.Client{Timeout: 5 * time.Second}
			res.Counters, _ = scrape(ctx, c, sd.httpAddr, "hintstream_hints_", "hintstream_requests_", "hintstream_sender_")
		}
		res.Elapsed = time.Since(began)
		out[k] = res
	}
	return out, nil
}

// drain waits up to d for every side's hints.
func drain(ctx context.Context, sides []*side, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for _, sd := range sides {
		select {
		case <-sd.rec.all:
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// startProfiles starts, for each hintstream side asking for one, a CPU
// profile from its first measured wake-up to its last; the channel gets
// its outcome.
func startProfiles(ctx context.Context, sides []*side, ticks []tick, start time.Time) []chan error {
	out := make([]chan error, len(sides))
	for k, sd := range sides {
		if sd.prog.CPUProfile == "" || sd.prog.Target != TargetHintstream {
			continue
		}
		var first, last time.Duration = -1, 0
		for _, tk := range ticks {
			if tk.side == k && tk.n >= sd.warm {
				if first < 0 {
					first = tk.at
				}
				last = tk.at
			}
		}
		if first < 0 {
			continue
		}
		ch := make(chan error, 1)
		out[k] = ch
		go func() {
			select {
			case <-time.After(time.Until(start.Add(first))):
			case <-ctx.Done():
				ch <- ctx.Err()
				return
			}
			ch <- cpuProfile(ctx, sd.httpAddr, max(1, int((last-first).Seconds()+0.5)), sd.prog.CPUProfile)
		}()
	}
	return out
}
