package streams

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Outcome says what Ensure did. The zero value is no outcome (an error).
type Outcome int

const (
	Created  Outcome = iota + 1 // the stream was absent and was created
	Attached                    // the stream existed and was left as it was
	Updated                     // the stream existed and missing subjects were added
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Attached:
		return "attached"
	case Updated:
		return "updated"
	}
	return "none"
}

var (
	// ErrConfigMismatch: an existing stream does not capture every subject
	// asked for, and updating it was not allowed.
	ErrConfigMismatch = errors.New("streams: existing stream does not capture the configured subjects")
	// ErrSubjectOverlap: the subjects are already captured by a stream of
	// another name (the server allows one stream per subject).
	ErrSubjectOverlap = errors.New("streams: subjects already captured by another stream")
)

// jsErrCodeSubjectOverlap is the server's "subjects overlap with an
// existing stream" (nats.go has no constant for it).
const jsErrCodeSubjectOverlap jetstream.ErrorCode = 10065

// EnsureOption configures Ensure and EnsureSet.
type EnsureOption func(*ensureOpts)

type ensureOpts struct {
	update   bool
	log      *slog.Logger
	retryFor time.Duration
}

// DefaultRetryTimeouts is how long Ensure goes on retrying a JetStream
// API request that timed out (WithRetryTimeouts). A cluster that is
// still electing its meta leader, or placing a replicated stream, under
// load, answers late rather than never: seen in CI, creating an R3
// stream on a 3-node cluster took longer than nats.go's 5 s request
// timeout while the machine was busy, and hintstream exited at start.
const DefaultRetryTimeouts = 30 * time.Second

// WithRetryTimeouts sets how long Ensure retries requests that timed out
// (default DefaultRetryTimeouts; 0: not at all). Only timeouts of the
// request itself and a cluster's "cannot place yet" answers are retried,
// never the caller's context ending, and no other error: a server
// without JetStream, or a refusal, still fails at once.
func WithRetryTimeouts(d time.Duration) EnsureOption {
	return func(o *ensureOpts) { o.retryFor = max(d, 0) }
}

// WithUpdate allows Ensure to add missing subjects to an existing stream.
// Default false: a missing subject is ErrConfigMismatch. Other settings
// of an existing stream are never changed, even with WithUpdate(true).
func WithUpdate(allow bool) EnsureOption { return func(o *ensureOpts) { o.update = allow } }

// WithLogger sets the logger; default slog.Default().
func WithLogger(l *slog.Logger) EnsureOption { return func(o *ensureOpts) { o.log = l } }

func buildOpts(opts []EnsureOption) ensureOpts {
	o := ensureOpts{retryFor: DefaultRetryTimeouts}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	if o.log == nil {
		o.log = slog.Default()
	}
	return o
}

// Ensure creates the stream cfg describes when no stream has its name,
// and otherwise attaches to the existing one without changing it:
//   - if the existing stream does not capture every subject of cfg
//     (exactly or through a wildcard), Ensure returns an error wrapping
//     ErrConfigMismatch, or with WithUpdate(true) adds the missing
//     subjects (Outcome Updated, logged at WARN);
//   - any other difference (MaxAge, storage, ...) is logged at INFO and
//     the stream is attached as it is.
//
// If cfg's subjects are captured by a stream of another name, the error
// wraps ErrSubjectOverlap and names that stream. A request that timed
// out is retried, with backoff, for up to DefaultRetryTimeouts
// (WithRetryTimeouts).
func Ensure(ctx context.Context, js jetstream.JetStream, cfg Config, opts ...EnsureOption) (jetstream.Stream, Outcome, error) {
	if err := cfg.validate(); err != nil {
		return nil, 0, err
	}
	o := buildOpts(opts)
	var (
		st jetstream.Stream
		oc Outcome
	)
	// A create that timed out may still have happened: the next try
	// looks the stream up first and attaches to it.
	err := retryTimeouts(ctx, js, o, "stream "+cfg.Name, func(ctx context.Context) error {
		var err error
		st, oc, err = ensureOnce(ctx, js, cfg, o)
		return err
	})
	return st, oc, err
}

// transient: err is a try's own timeout (not ctx ending), or the
// cluster saying it cannot place or answer yet: "no suitable peers for
// placement, peer offline" (10005 with a peer offline: seen in CI on a
// 3-node cluster just after every node reported ready) or "temporarily
// unavailable" (10008). 10005 with every peer online is a replica count
// the cluster cannot hold, and fails at once.
func transient(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return true
	}
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jsErrCodeUnavailable ||
		(apiErr.ErrorCode == jsErrCodeNoPeers && strings.Contains(apiErr.Description, "peer offline"))
}

// The server's codes for a cluster that cannot place or answer yet
// (server/errors.json: JSClusterNoPeersErrF, JSClusterNotAvailErr).
const (
	jsErrCodeNoPeers     jetstream.ErrorCode = 10005
	jsErrCodeUnavailable jetstream.ErrorCode = 10008
)

func ensureOnce(ctx context.Context, js jetstream.JetStream, cfg Config, o ensureOpts) (jetstream.Stream, Outcome, error) {
	// Two tries: a concurrent creator may win the race between our lookup
	// and our create; the second lookup then attaches to its stream.
	for range 2 {
		st, err := js.Stream(ctx, cfg.Name)
		if err == nil {
			return attach(ctx, js, st, cfg, o)
		}
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, 0, fmt.Errorf("streams: look up stream %q: %w", cfg.Name, err)
		}
		st, err = js.CreateStream(ctx, cfg.streamConfig())
		switch {
		case err == nil:
			o.log.Info("stream created", "stream", cfg.Name, "subjects", cfg.Subjects)
			return st, Created, nil
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			continue
		case isOverlap(err):
			return nil, 0, overlapError(ctx, js, cfg.Name, cfg.Subjects, err)
		default:
			return nil, 0, fmt.Errorf("streams: create stream %q: %w", cfg.Name, err)
		}
	}
	return nil, 0, fmt.Errorf("streams: stream %q: created concurrently but not found", cfg.Name)
}

func attach(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, cfg Config, o ensureOpts) (jetstream.Stream, Outcome, error) {
	have := st.CachedInfo().Config
	if d := cfg.differences(have); len(d) > 0 {
		o.log.Info("attached with differing config", "stream", cfg.Name, "differences", d)
	}
	missing := missingSubjects(have.Subjects, cfg.Subjects)
	if len(missing) == 0 {
		return st, Attached, nil
	}
	if !o.update {
		return nil, 0, fmt.Errorf("%w: stream %q captures %s but not %s; "+
			"add them to the stream yourself, configure a stream that captures them, or allow updates",
			ErrConfigMismatch, cfg.Name, quoteList(have.Subjects), quoteList(missing))
	}
	upd := have
	upd.Subjects = append(slices.Clone(have.Subjects), missing...)
	nst, err := js.UpdateStream(ctx, upd)
	if err != nil {
		if isOverlap(err) {
			return nil, 0, overlapError(ctx, js, cfg.Name, missing, err)
		}
		return nil, 0, fmt.Errorf("streams: add subjects %s to stream %q: %w", quoteList(missing), cfg.Name, err)
	}
	o.log.Warn("stream subjects updated", "stream", cfg.Name,
		"old_subjects", have.Subjects, "new_subjects", upd.Subjects)
	return nst, Updated, nil
}

func isOverlap(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeSubjectOverlap {
		return true
	}
	return strings.Contains(err.Error(), "subjects overlap")
}

// overlapError names the streams that already capture subjects, so the
// operator can point hintstream at them instead.
func overlapError(ctx context.Context, js jetstream.JetStream, name string, subjects []string, cause error) error {
	var owners, lookupErrs []string
	for _, s := range subjects {
		owner, err := js.StreamNameBySubject(ctx, s)
		switch {
		case err != nil:
			lookupErrs = append(lookupErrs, fmt.Sprintf("%s: %v", s, err))
		case owner != name && !slices.Contains(owners, owner):
			owners = append(owners, owner)
		}
	}
	if len(owners) == 0 {
		return fmt.Errorf("%w: stream %q: subjects %s overlap another stream (lookup: %s): %w",
			ErrSubjectOverlap, name, quoteList(subjects), strings.Join(lookupErrs, "; "), cause)
	}
	return fmt.Errorf("%w: stream %q: subjects %s are already captured by stream %s; "+
		"configure the stream name %q instead of %q to attach to it: %w",
		ErrSubjectOverlap, name, quoteList(subjects), quoteList(owners), owners[0], name, cause)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// EnsureSet runs Ensure for every stream of s that has a name, in the
// order Requests, Responses, KVEvents, Load, DeadLetter. It does not stop
// at the first failure, so one run reports every problem: the map holds
// the outcome of each stream that succeeded, keyed by stream name, and
// the error joins the failures. When two configs share a name, Created
// or Updated is kept over Attached.
func EnsureSet(ctx context.Context, js jetstream.JetStream, s Set, opts ...EnsureOption) (map[string]Outcome, error) {
	out := make(map[string]Outcome)
	var errs []error
	for _, cfg := range s.configs() {
		if cfg.Name == "" {
			continue
		}
		_, oc, err := Ensure(ctx, js, cfg, opts...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := out[cfg.Name]; !ok || prev == Attached {
			out[cfg.Name] = oc
		}
	}
	return out, errors.Join(errs...)
}
