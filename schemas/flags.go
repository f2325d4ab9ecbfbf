package schemas

import (
	"flag"

	"github.com/hintstream/hintstream/internal/cmdline"
)

// RegisterFlags registers the input limits on fs, bound to l and set to
// DefaultLimits. A value of 0 or below means the default, as in Limits.
func (l *Limits) RegisterFlags(fs *flag.FlagSet) {
	d := DefaultLimits()
	fs.IntVar(&l.MaxTokens, "max-tokens", d.MaxTokens, "largest token_ids accepted in an event")
	cmdline.BytesVar(fs, &l.MaxBytes, "max-message-bytes", d.MaxBytes, "largest event accepted, in bytes (larger ones are dead-lettered)")
	fs.IntVar(&l.MaxHeaders, "max-headers", d.MaxHeaders, "most entries in a request's headers map, and most NATS header values on any event")
	cmdline.BytesVar(fs, &l.MaxString, "max-string", d.MaxString, "longest id, model, header or tool name accepted, in bytes")
	fs.IntVar(&l.MaxDepth, "max-depth", d.MaxDepth, "deepest JSON or msgpack nesting accepted in an event")
	cmdline.BytesVar(fs, &l.MaxHeaderBytes, "max-header-bytes", d.MaxHeaderBytes, "most bytes of NATS headers accepted on one event")
}
