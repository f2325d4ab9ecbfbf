package streams

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Config is the part of a stream's configuration hintstream cares about.
// Zero values mean: MaxAge and MaxBytes unlimited, Storage file, Replicas
// 1, Duplicates the server default (2m).
type Config struct {
	Name        string
	Subjects    []string
	MaxAge      time.Duration
	MaxBytes    int64
	Storage     jetstream.StorageType
	Replicas    int
	Duplicates  time.Duration
	Description string

	// Cluster and retention.
	//
	// PlacementTags, when set, ask the server to place the stream's
	// replicas on servers carrying all of these tags (server_tags).
	PlacementTags []string
}

// Set names the five streams hintstream uses. A Config with an empty Name
// is skipped by EnsureSet, so a deployment can leave one out (for example
// the dead-letter stream).
type Set struct {
	Requests, Responses, KVEvents, Load, DeadLetter Config
}

// DefaultDuplicates is the dedup window of every default stream.
const DefaultDuplicates = 2 * time.Minute

// DefaultSet returns the streams of the brief's "Defaults that others rely
// on" table. Operators and scripts address hintstream by these names and
// subjects, so changing any of them breaks deployments.
func DefaultSet() Set {
	// Every stream shares these, for these reasons:
	//   - file storage: durable consumers resume after a server restart,
	//     and replay from history needs the history to survive it;
	//   - one replica: works on a single server; a cluster operator who
	//     wants more creates the stream first and hintstream attaches;
	//   - a 2m duplicate window (the server's own default, stated here
	//     because publishers rely on it): a publisher that retries with the
	//     same Nats-Msg-Id is not stored twice.
	base := func(name, subject, desc string) Config {
		return Config{
			Name:        name,
			Subjects:    []string{subject},
			Storage:     jetstream.FileStorage,
			Replicas:    1,
			Duplicates:  DefaultDuplicates,
			Description: desc,
		}
	}
	s := Set{
		// Requests and responses are kept DefaultRequestsMaxAge: long
		// enough for the request index (--request-index-ttl, 1h) to find a
		// response's request, and for a replay of the last hour; unbounded
		// they grow by ~24 MB/s at 2,000 wake-ups/s.
		Requests:  base("LLM_REQUESTS", "llm.requests.>", "hintstream: chat request events"),
		Responses: base("LLM_RESPONSES", "llm.responses.>", "hintstream: finished response events"),
		// KV events are the router's view of every worker's cache; losing
		// them by age would make a replaying consumer route wrongly.
		KVEvents: base("KV_EVENTS", "kv.events.>", "hintstream: worker KV cache events"),
		// Load is a current-state signal: an hour-old figure is worthless,
		// so keep an hour (enough to debug) rather than forever.
		Load: base("KV_LOAD", "kv.load.>", "hintstream: worker load metrics"),
		// Dead letters wait for a human; a week spans a long weekend.
		DeadLetter: base("HINTSTREAM_DLQ", "hintstream.dlq.>", "hintstream: rejected events"),
	}
	s.Requests.MaxAge, s.Responses.MaxAge = DefaultRequestsMaxAge, DefaultRequestsMaxAge
	s.Load.MaxAge = time.Hour
	s.DeadLetter.MaxAge = 7 * 24 * time.Hour
	return s
}

// configs returns the set's configs in a fixed order.
func (s Set) configs() []Config {
	return []Config{s.Requests, s.Responses, s.KVEvents, s.Load, s.DeadLetter}
}

func (c Config) validate() error {
	if c.Name == "" {
		return errors.New("streams: stream name is empty")
	}
	if len(c.Subjects) == 0 {
		return fmt.Errorf("streams: stream %q has no subjects", c.Name)
	}
	for _, s := range c.Subjects {
		if err := validSubject(s); err != nil {
			return fmt.Errorf("streams: stream %q: %w", c.Name, err)
		}
	}
	if c.MaxAge < 0 || c.Duplicates < 0 || c.Replicas < 0 {
		return fmt.Errorf("streams: stream %q: negative MaxAge, Duplicates or Replicas", c.Name)
	}
	if err := (Placement{Replicas: c.Replicas, Tags: c.PlacementTags}).Validate(); err != nil {
		return fmt.Errorf("streams: stream %q: %w", c.Name, err)
	}
	return nil
}

func (c Config) replicas() int {
	if c.Replicas == 0 {
		return 1
	}
	return c.Replicas
}

func (c Config) maxBytes() int64 {
	if c.MaxBytes <= 0 {
		return -1
	}
	return c.MaxBytes
}

func (c Config) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.Name,
		Description: c.Description,
		Subjects:    append([]string(nil), c.Subjects...),
		MaxAge:      c.MaxAge,
		MaxBytes:    c.maxBytes(),
		Storage:     c.Storage,
		Replicas:    c.replicas(),
		Duplicates:  c.Duplicates,
		Placement:   c.placement(),
		// Marks the stream as hintstream's: only such a stream is ever
		// purged (see CreatedByHintstream).
		Metadata: map[string]string{MetadataCreatedBy: createdByValue},
	}
}

// differences lists the settings in which have differs from c, ignoring
// subjects (handled separately) and settings c leaves to the server.
func (c Config) differences(have jetstream.StreamConfig) []string {
	var d []string
	add := func(field string, want, got any) {
		d = append(d, fmt.Sprintf("%s: want %v, have %v", field, want, got))
	}
	if c.MaxAge != have.MaxAge {
		add("max_age", c.MaxAge, have.MaxAge)
	}
	haveBytes := have.MaxBytes
	if haveBytes <= 0 {
		haveBytes = -1
	}
	if c.maxBytes() != haveBytes {
		add("max_bytes", c.maxBytes(), haveBytes)
	}
	if c.Storage != have.Storage {
		add("storage", c.Storage, have.Storage)
	}
	if c.replicas() != max(have.Replicas, 1) {
		add("replicas", c.replicas(), have.Replicas)
	}
	if c.Duplicates != 0 && c.Duplicates != have.Duplicates {
		add("duplicates", c.Duplicates, have.Duplicates)
	}
	if c.Description != "" && c.Description != have.Description {
		add("description", c.Description, have.Description)
	}
	return d
}
