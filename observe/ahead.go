package observe

import (
	"net/http"

	"github.com/hintstream/hintstream/decide/ahead"
)

// AheadView answers GET /v1/ahead: the header-free prefetches' totals
// and their waste budget.
type AheadView struct {
	Stats ahead.Stats `json:"stats"`
}

func (s Sources) aheadView(*http.Request) (any, error) {
	st, ok := s.Ahead()
	if !ok {
		return nil, &httpError{http.StatusNotFound, "header-free prefetch is off on this instance (--prefetch-ahead)"}
	}
	return AheadView{Stats: st}, nil
}
