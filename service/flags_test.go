package service

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service/natsconn"
	"github.com/hintstream/hintstream/streams"
)

// parseRunFlags parses args with RegisterFlags' flags into a Config and
// completes it with ApplyFlags.
func parseRunFlags(args ...string) (Config, error) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return c, c.ApplyFlags()
}

// RegisterFlags' defaults make a Config that Validate takes, with the
// defaults the fields document.
func TestRunFlagsDefaults(t *testing.T) {
	t.Setenv("HINTSTREAM_GROUP", "")
	c, err := parseRunFlags()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Defaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	switch {
	case c.RequestsDurable != "hintstream-requests" || c.ResponsesDurable != "hintstream-responses":
		t.Fatalf("durables %q %q", c.RequestsDurable, c.ResponsesDurable)
	case c.SenderQueue != zmqsend.DefaultQueueSize || c.SenderMaxHeld != zmqsend.DefaultMaxHeld || c.SenderSettleDelay != zmqsend.DefaultSettleDelay:
		t.Fatalf("senders %d %d %v", c.SenderQueue, c.SenderMaxHeld, c.SenderSettleDelay)
	case c.SnapshotInterval != DefaultSnapshotInterval || c.KVEventsKeep != DefaultKVEventsKeep || c.WorkerGrace != DefaultWorkerGrace:
		t.Fatalf("timers %v %v %v", c.SnapshotInterval, c.KVEventsKeep, c.WorkerGrace)
	case c.NATS.Name != "hintstream" || c.NATS.InboxPrefix != natsconn.DefaultInboxPrefix || c.NATS.ConnectTimeout != natsconn.DefaultConnectTimeout:
		t.Fatalf("NATS %+v", c.NATS)
	case c.NoAffinity || c.AffinityBucket != schemas.DefaultAffinityBucket || c.Models != nil || c.KVStreams != nil:
		t.Fatalf("cluster: affinity %q %v, models %q, kv streams %q", c.AffinityBucket, c.NoAffinity, c.Models, c.KVStreams)
	case c.Agents != nil:
		t.Fatal("a planner is on by default")
	case c.Routing == nil || c.EndpointRules.MaxDPRanks != schemas.DefaultMaxDPRanks:
		t.Fatalf("decisions or endpoint rules unset: %+v %+v", c.Routing, c.EndpointRules)
	}
	if !slices.Equal(c.Streams.Requests.Subjects, streams.DefaultSet().Requests.Subjects) {
		t.Fatalf("requests subjects %q", c.Streams.Requests.Subjects)
	}
}

// The command line's 0 for "off" or "no bound" becomes the Config's own
// value for it, and --group names the durables that are not given.
func TestRunFlagsZeroMeansOff(t *testing.T) {
	c, err := parseRunFlags("--sender-settle-delay", "0", "--sender-max-held", "0", "--sender-idle-close", "0",
		"--snapshot-interval", "0", "--kv-events-keep", "0", "--worker-grace", "0",
		"--pin-slots-max-bytes", "0", "--request-index-max-bytes", "0", "--affinity-bucket", "",
		"--group", "g", "--responses-durable", "mine", "--kv-streams", "KV_A, KV_B", "--models", "m1,m2", "--pprof", "--http-addr", ":0")
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case c.SenderSettleDelay != Immediately || c.SenderMaxHeld != NoBound || c.SenderIdleClose != Off:
		t.Fatalf("senders %v %d %v", c.SenderSettleDelay, c.SenderMaxHeld, c.SenderIdleClose)
	case c.SnapshotInterval != Off || c.KVEventsKeep != Off || c.WorkerGrace != Off:
		t.Fatalf("timers %v %v %v", c.SnapshotInterval, c.KVEventsKeep, c.WorkerGrace)
	case c.PinSlotsMaxBytes != NoBound || c.RequestIndexMaxBytes != NoBound:
		t.Fatalf("bucket caps %d %d", c.PinSlotsMaxBytes, c.RequestIndexMaxBytes)
	case !c.NoAffinity:
		t.Fatal("--affinity-bucket '' left affinity on")
	case c.RequestsDurable != "g-requests" || c.ResponsesDurable != "mine":
		t.Fatalf("durables %q %q", c.RequestsDurable, c.ResponsesDurable)
	case !slices.Equal(c.KVStreams, []string{"KV_A", "KV_B"}) || !slices.Equal(c.Models, []string{"m1", "m2"}):
		t.Fatalf("lists %q %q", c.KVStreams, c.Models)
	case !c.Pprof || c.HTTPAddr != ":0":
		t.Fatalf("http %q %v", c.HTTPAddr, c.Pprof)
	}
	if err := c.Defaults().Validate(); err != nil {
		t.Fatalf("off values invalid: %v", err)
	}
}

// A refused value wraps ErrInvalidConfig and names its flag, whichever
// package's check refused it.
func TestRunFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--snapshot-interval", "-1s"}, {"--sender-idle-close", "-1s"}, {"--max-dp-ranks", "0"}, {"--metrics-top-tools", "0"},
		{"--connect-timeout", "-1s"}, {"--overlap-jump", "0"}, {"--worker-grace", "-1s"}, {"--pin-renew-rate", "0"},
		{"--requests-max-age", "1m", "--request-index-ttl", "1h"}, {"--max-endpoints", "0"},
		// Refused rather than replaced by their defaults.
		{"--sender-queue", "0"}, {"--kv-apply-shards", "0"}, {"--max-ack-pending", "-1"}, {"--ack-wait", "0s"},
		{"--request-index-ttl", "0s"}, {"--embedded-port", "70000"}, {"--prefetch-ttl", "0s"},
	} {
		_, err := parseRunFlags(args...)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("%v: want an error wrapping ErrInvalidConfig naming %s, got %v", args, args[0], err)
		}
	}
}

// RegisterStreamFlags alone (the streams command) builds the stream set:
// names, subjects, dead-letter prefix, replicas and Dynamo's scope.
func TestStreamFlags(t *testing.T) {
	fs := flag.NewFlagSet("streams", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var c Config
	c.RegisterStreamFlags(fs)
	if err := fs.Parse([]string{"--requests-stream", "REQ", "--requests-subjects", "a.>, b.>", "--dead-letter-prefix", "dl",
		"--stream-replicas", "3", "--stream-placement-tags", "x,y", "--responses-max-bytes", "1000", "--dynamo-namespace", "ns"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ApplyFlags(); err != nil {
		t.Fatal(err)
	}
	s := c.Streams
	switch {
	case s.Requests.Name != "REQ" || !slices.Equal(s.Requests.Subjects, []string{"a.>", "b.>"}):
		t.Fatalf("requests %+v", s.Requests)
	case !slices.Equal(s.DeadLetter.Subjects, []string{"dl.>"}) || c.DeadLetterPrefix != "dl":
		t.Fatalf("dead letter %+v %q", s.DeadLetter, c.DeadLetterPrefix)
	case s.KVEvents.Replicas != 3 || !slices.Equal(s.Load.PlacementTags, []string{"x", "y"}) || s.Responses.MaxBytes != 1000:
		t.Fatalf("placement %+v", s)
	case !slices.Contains(s.KVEvents.Subjects, eventplane.Scope{Namespace: "ns", Component: eventplane.DefaultComponent}.KVEventSubjects()[0]):
		t.Fatalf("event plane subjects missing: %q", s.KVEvents.Subjects)
	}
	if err := c.ApplyFlags(); err != nil || c.Streams.Requests.Name != "REQ" {
		t.Fatalf("a second ApplyFlags changed the config: %v %+v", err, c.Streams.Requests)
	}
}
