package routing

import (
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// Choose returns the candidate Select would return for req, and every
// candidate it chose among (in registry order), from one view of the
// index and loads, without booking anything: with spreading on, the
// virtual load is read but not added to. It is for inspection; routing
// decisions go through Select. ErrNoWorker when there is no candidate.
func (s *Selector) Choose(req *schemas.RequestEvent) (Candidate, []Candidate, error) {
	now := time.Time{}
	if s.spread != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		now = s.now()
	}
	sc := s.getScratch()
	defer s.putScratch(sc)
	scratch := s.candidates(sc, req, now)
	// choose may reorder its argument (temperature > 0); ours stays intact.
	cands := cloneCandidates(scratch)
	c, err := s.choose(req, scratch)
	return c, cands, err
}
