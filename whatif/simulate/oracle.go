package simulate

import "context"

// oracle is the next-turn oracle (ModeOracle). It acts on the same
// triggers as hintstream, knowing each conversation's next turn: at
// a wake-up it loads the announced request's L3-resident pages into the
// worker the router picks; at a tool call it pins exactly the pages the
// conversation's next request reuses, until that request arrives.
// With affinity on, the turn goes where its prefetch went.
type oracle struct {
	p      *player
	pinned map[int]int // request → its prefetch's worker (affinity on)
}

func (o *oracle) wakeup(_ context.Context, i int) error {
	pr, err := o.p.get(i)
	if err != nil {
		return err
	}
	wk, _, err := o.p.cl.Route(pr)
	if err != nil {
		return err
	}
	if o.p.cfg.Affinity {
		o.pinned[i] = wk
	}
	return o.p.prefetch(i, wk, pr)
}

func (o *oracle) preferred(_ context.Context, i int) (int, bool, error) {
	wk, ok := o.pinned[i]
	return wk, ok, nil
}

func (o *oracle) request(context.Context, int) error { return nil }

func (o *oracle) response(_ context.Context, i, _ int) error {
	r := o.p.w.Req(i)
	if !r.ToolCall || r.Next < 0 {
		return nil // a tool call whose result never came back: nothing to know
	}
	next := o.p.w.Req(r.Next)
	ttl := next.At - o.p.cl.Now()
	if ttl <= 0 {
		return nil
	}
	mine, err := o.p.pr.hashes(i)
	if err != nil {
		return err
	}
	theirs, err := o.p.pr.hashes(r.Next)
	if err != nil {
		return err
	}
	n := 0
	for n < len(mine.Keys) && n < len(theirs.Keys) && mine.Keys[n] == theirs.Keys[n] {
		n++
	}
	if n == 0 {
		return nil
	}
	o.p.cl.L3.Pin("session:"+r.Session, mine.Keys[:n], ttl, o.p.cl.Now())
	o.p.res.Pins++
	return nil
}

func (o *oracle) forget(i int) { delete(o.pinned, i) }

func (o *oracle) finish(*ModeResult) {}
func (o *oracle) close()             {}
