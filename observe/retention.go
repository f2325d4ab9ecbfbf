package observe

import (
	"net/http"

	"github.com/hintstream/hintstream/decide/retention"
)

// RetentionTop is how many pinned pages GET /v1/retention lists.
const RetentionTop = 50

// RetentionView answers GET /v1/retention: the retention planner's
// counters and learned shares, and the best pages of its last plan.
type RetentionView struct {
	Stats  retention.Stats    `json:"stats"`
	Pinned []retention.Pinned `json:"pinned"`
}

func (s Sources) retentionView(*http.Request) (any, error) {
	top, st, ok := s.Retention()
	if !ok {
		return nil, &httpError{http.StatusNotFound, "the retention planner is off on this instance (--l3-pin-budget)"}
	}
	if len(top) > RetentionTop {
		top = top[:RetentionTop]
	}
	return RetentionView{Stats: st, Pinned: top}, nil
}
