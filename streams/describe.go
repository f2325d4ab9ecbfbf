package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Report is what checking found for one configured stream, without changing
// anything. Its JSON form is part of `hintstream streams check --json`.
type Report struct {
	// Role is the stream's part in a Set ("requests", "kv-events", ...);
	// empty when the Report comes from one stream rather than CheckSet.
	Role     string   `json:"role,omitempty"`
	Name     string   `json:"name"`
	Subjects []string `json:"subjects"` // as configured
	Present  bool     `json:"present"`
	// HaveSubjects are the existing stream's subjects (present only).
	HaveSubjects []string `json:"have_subjects,omitempty"`
	// Missing are configured subjects no subject of the existing stream
	// covers: Ensure would fail with ErrConfigMismatch on them.
	Missing []string `json:"missing_subjects,omitempty"`
	// Differences are other settings (max_age, storage, replicas,
	// duplicates, ...) in which the existing stream differs; Ensure
	// attaches anyway and never changes them.
	Differences []string `json:"differences,omitempty"`
	// CapturedBy names other streams that already capture configured
	// subjects of an absent stream: creating it would fail with
	// ErrSubjectOverlap, configuring one of these names would attach.
	CapturedBy []string `json:"captured_by,omitempty"`
}

// OK reports whether Ensure would attach to the stream as it is: present
// and capturing every configured subject. Differences do not count.
func (r Report) OK() bool { return r.Present && len(r.Missing) == 0 }

// Status is one word for the report: "ok", "differs" (ok, but other
// settings differ), "mismatch" (subjects missing) or "absent".
func (r Report) Status() string {
	switch {
	case !r.Present:
		return "absent"
	case len(r.Missing) > 0:
		return "mismatch"
	case len(r.Differences) > 0:
		return "differs"
	}
	return "ok"
}

// check compares the stream cfg describes with what the server has and
// changes nothing. An absent stream is a Report with Present false, not
// an error; errors are an invalid cfg or a failed request.
func check(ctx context.Context, js jetstream.JetStream, cfg Config) (Report, error) {
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	r := Report{Name: cfg.Name, Subjects: slices.Clone(cfg.Subjects)}
	st, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		owners, err := capturedBy(ctx, js, cfg.Name, cfg.Subjects)
		r.CapturedBy = owners
		return r, err
	case err != nil:
		return Report{}, fmt.Errorf("streams: look up stream %q: %w", cfg.Name, err)
	}
	have := st.CachedInfo().Config
	r.Present = true
	r.HaveSubjects = slices.Clone(have.Subjects)
	r.Missing = missingSubjects(have.Subjects, cfg.Subjects)
	r.Differences = cfg.differences(have)
	return r, nil
}

func capturedBy(ctx context.Context, js jetstream.JetStream, name string, subjects []string) ([]string, error) {
	var owners []string
	for _, s := range subjects {
		owner, err := js.StreamNameBySubject(ctx, s)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
		case err != nil:
			return nil, fmt.Errorf("streams: which stream captures %q: %w", s, err)
		case owner != name && !slices.Contains(owners, owner):
			owners = append(owners, owner)
		}
	}
	return owners, nil
}

// CheckSet runs check for every named stream of s, in EnsureSet's order,
// and stops at the first error (a request failure says nothing about the
// other streams worth reporting).
func CheckSet(ctx context.Context, js jetstream.JetStream, s Set) ([]Report, error) {
	var out []Report
	for i, cfg := range s.configs() {
		if cfg.Name == "" {
			continue
		}
		r, err := check(ctx, js, cfg)
		if err != nil {
			return out, err
		}
		r.Role = roles()[i]
		out = append(out, r)
	}
	return out, nil
}

// roles names the streams of a Set in EnsureSet's order, as the command
// line's flags do.
func roles() [5]string {
	return [...]string{"requests", "responses", "kv-events", "load", "dead-letter"}
}

// Description is a stream's configuration and state, for operators.
// Durations are nanoseconds in JSON; times are RFC 3339, zero when the
// stream is empty.
type Description struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Subjects    []string      `json:"subjects"`
	Retention   string        `json:"retention"`
	Storage     string        `json:"storage"`
	Replicas    int           `json:"replicas"`
	MaxAge      time.Duration `json:"max_age_ns"`
	MaxBytes    int64         `json:"max_bytes"`
	MaxMsgs     int64         `json:"max_msgs"`
	Duplicates  time.Duration `json:"duplicates_ns"`
	// CreatedByHintstream: the stream carries MetadataCreatedBy, so
	// hintstream may purge it (KV events behind snapshots); false for a
	// stream it only attached to.
	CreatedByHintstream bool `json:"created_by_hintstream"`

	Messages  uint64    `json:"messages"`
	Bytes     uint64    `json:"bytes"`
	FirstSeq  uint64    `json:"first_seq"`
	FirstTime time.Time `json:"first_time"`
	LastSeq   uint64    `json:"last_seq"`
	LastTime  time.Time `json:"last_time"`

	ConsumerCount int             `json:"consumer_count"`
	Consumers     []ConsumerState `json:"consumers"`
	// Unconsumed: messages per subject that no durable consumer's filter
	// matches (unconsumed.go); absent for streams without durables.
	Unconsumed map[string]uint64 `json:"unconsumed,omitempty"`
}

// ConsumerState is one consumer of a described stream.
type ConsumerState struct {
	Name string `json:"name"`
	// Durable is false for ephemeral consumers, such as the ordered ones
	// every hintstream instance keeps on the KV-event and load streams.
	Durable        bool     `json:"durable"`
	FilterSubjects []string `json:"filter_subjects,omitempty"`
	AckPolicy      string   `json:"ack_policy"`
	// Pending: messages matching the consumer not yet delivered to it.
	Pending uint64 `json:"pending"`
	// AckPending: delivered and not yet acknowledged.
	AckPending  int    `json:"ack_pending"`
	Redelivered int    `json:"redelivered"`
	Waiting     int    `json:"waiting"`
	DeliveredTo uint64 `json:"delivered_stream_seq"`
	AckFloor    uint64 `json:"ack_floor_stream_seq"`
}

// Describe fetches the configuration and state of stream name and of all
// its consumers, sorted by name. An absent stream is an error wrapping
// jetstream.ErrStreamNotFound.
func Describe(ctx context.Context, js jetstream.JetStream, name string) (Description, error) {
	st, err := js.Stream(ctx, name)
	if err != nil {
		return Description{}, fmt.Errorf("streams: describe stream %q: %w", name, err)
	}
	info := st.CachedInfo()
	c, s := info.Config, info.State
	d := Description{
		Name: c.Name, Description: c.Description, Subjects: slices.Clone(c.Subjects),
		Retention: strings.ToLower(c.Retention.String()), Storage: strings.ToLower(c.Storage.String()),
		Replicas: c.Replicas, MaxAge: c.MaxAge, MaxBytes: c.MaxBytes, MaxMsgs: c.MaxMsgs, Duplicates: c.Duplicates,
		Messages: s.Msgs, Bytes: s.Bytes, FirstSeq: s.FirstSeq, LastSeq: s.LastSeq,
		ConsumerCount: s.Consumers, Consumers: []ConsumerState{},
	}
	d.CreatedByHintstream = CreatedByHintstream(info)
	// The server reports an empty stream's times as the zero time in
	// UTC or as 0001-01-01 depending on version; normalise to zero.
	if s.Msgs > 0 {
		d.FirstTime, d.LastTime = s.FirstTime, s.LastTime
	}
	l := st.ListConsumers(ctx)
	for ci := range l.Info() {
		d.Consumers = append(d.Consumers, consumerState(ci))
	}
	if err := l.Err(); err != nil {
		return Description{}, fmt.Errorf("streams: list consumers of %q: %w", name, err)
	}
	slices.SortFunc(d.Consumers, func(a, b ConsumerState) int { return strings.Compare(a.Name, b.Name) })
	if d.Unconsumed, err = Unconsumed(ctx, js, name, d.Consumers); err != nil {
		return Description{}, err
	}
	return d, nil
}

func consumerState(ci *jetstream.ConsumerInfo) ConsumerState {
	filters := slices.Clone(ci.Config.FilterSubjects)
	if ci.Config.FilterSubject != "" {
		filters = append([]string{ci.Config.FilterSubject}, filters...)
	}
	return ConsumerState{
		Name: ci.Name, Durable: ci.Config.Durable != "", FilterSubjects: filters,
		AckPolicy: ackPolicy(ci.Config.AckPolicy),
		Pending:   ci.NumPending, AckPending: ci.NumAckPending, Redelivered: ci.NumRedelivered,
		Waiting: ci.NumWaiting, DeliveredTo: ci.Delivered.Stream, AckFloor: ci.AckFloor.Stream,
	}
}

func ackPolicy(p jetstream.AckPolicy) string {
	switch p {
	case jetstream.AckNonePolicy:
		return "none"
	case jetstream.AckAllPolicy:
		return "all"
	case jetstream.AckExplicitPolicy:
		return "explicit"
	}
	return p.String()
}
