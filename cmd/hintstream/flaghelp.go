package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// A flagGroup is one heading of a command's grouped --help: short are
// the flags --help shows under it, more the ones only --help-all adds.
// Names are space-separated, without dashes.
type flagGroup struct {
	heading     string
	short, more string
}

// The headings, in the order they print. A command's flags in no group
// print under headOther, with --help-all only.
const (
	headBus       = "Bus (NATS connection, credentials, TLS, config file)"
	headSources   = "Sources (what it consumes)"
	headTargets   = "Targets (where hints go: run logs one \"hint targets\" line per hint kind at start; docs/integrate.md)"
	headHints     = "Hints (wake-up prefetches and tool-call pins)"
	headLimits    = "Limits (memory, size and rate bounds)"
	headOperation = "Operation (health endpoint, logs, shutdown)"
	headOther     = "Other"
)

// The NATS connection flags every command takes (natsconn.Config's):
// URL and credentials file in --help, the rest in --help-all.
const (
	natsShort = "nats-url nats-creds"
	natsMore  = "nats-nkey nats-tls-ca nats-tls-cert nats-tls-key nats-tls-server-name nats-tls-insecure " +
		"nats-user nats-password nats-token nats-inbox-prefix"
)

// flagGroups is, for each command with a grouped --help, which flags it
// shows and under which heading: the one place that chooses them, so a
// flag is defined where it belongs (service/flags_*.go, ...) and named
// here. The short lists are the flags the deployment docs, the Helm
// chart and the examples set. A command not here prints every flag
// for --help, in one list.
var flagGroups = map[string][]flagGroup{
	"run": {
		{headBus,
			"config nats-url nats-creds nats-nkey nats-tls-ca",
			"nats-tls-cert nats-tls-key nats-tls-server-name nats-tls-insecure nats-user nats-password nats-token " +
				"nats-inbox-prefix connect-timeout data-dir embedded-port"},
		{headSources,
			"group source requests-subjects responses-subjects kv-events-subjects dynamo-namespace agents update-streams stream-replicas",
			"dynamo-component dynamo-active-sequences dynamo-zmq dynamo-zmq-broker requests-stream responses-stream kv-events-stream kv-streams load-stream load-subjects " +
				"agent-events-stream models requests-durable responses-durable requests-deliver-all ack-wait " +
				"requests-max-age requests-max-bytes responses-max-age responses-max-bytes stream-placement-tags " +
				"kv-events-keep dead-letter-stream dead-letter-prefix request-trace-subject request-trace-stream request-trace-durable"},
		{headTargets,
			"pin-endpoint lmcache-controller retain-on-worker",
			"pins lmcache-instance lmcache-location lmcache-repin " +
				"registry-bucket registration-prefix worker-grace affinity-bucket pin-curve-public-key curve-public-key " +
				"curve-secret-key allow-ipc-endpoints sender-queue sender-max-held sender-settle-delay sender-idle-close"},
		{headHints,
			"prefetch-ttl pin-headroom pin-slack pin-max-ttl keep-pin-on-next-turn",
			"pin-min-ttl pin-renew-max pin-slot-linger pin-slot-marker-ttl request-index-ttl " +
				"tool-time-default tool-time-min-samples tool-time-percentile " +
				"agent-feedback agent-predict agent-predict-min-samples " +
				"spread-wakeups spread-half-life exclude-stale overlap-jump overlap-score-weight router-cost router-temperature " +
				"router-kv-overlap-score-credit router-kv-overlap-score-credit-decay router-host-cache-hit-weight " +
				"router-disk-cache-hit-weight router-prefill-load-scale router-decode-active-request-weight " +
				"kv-bytes-per-token l3-bandwidth"},
		{headLimits,
			"index-max-blocks max-message-bytes max-endpoints",
			"max-ack-pending max-tokens max-string max-depth max-headers max-header-bytes max-dp-ranks " +
				"holding-workers holding-blocks agent-max-programs pin-max-keys pin-max-bytes pin-renew-rate " +
				"pin-slots-max-bytes request-index-max-bytes index-capacity metrics-top-tools request-trace-max-hashes"},
		{headOperation,
			"http-addr log-format log-level shutdown-timeout check-config",
			"pprof hints-log snapshot-interval snapshot-bucket snapshot-reclaim-grace kv-apply-shards index-shards"},
	},
	"replay": {
		{headBus, "config " + natsShort, natsMore},
		{headSources,
			"since until from-seq models",
			"requests-stream responses-stream kv-events-stream kv-events-subjects load-stream " +
				"dynamo-namespace dynamo-component dynamo-active-sequences registry-bucket"},
		{headTargets, "dry-run out", "pin-endpoint"},
		{headHints,
			"prefetch-ttl pin-headroom pin-slack pin-max-ttl keep-pin-on-next-turn",
			"pin-min-ttl pin-renew-max tool-time-default tool-time-min-samples tool-time-percentile " +
				"spread-wakeups spread-half-life exclude-stale overlap-jump overlap-score-weight router-cost router-temperature " +
				"router-kv-overlap-score-credit router-kv-overlap-score-credit-decay router-host-cache-hit-weight " +
				"router-disk-cache-hit-weight router-prefill-load-scale router-decode-active-request-weight"},
		{headLimits,
			"index-max-blocks max-message-bytes",
			"max-tokens max-string max-depth max-headers max-header-bytes holding-workers holding-blocks index-capacity index-shards"},
		{headOperation, "log-level", "log-format"},
	},
	"whatif": {
		{headBus, natsShort, natsMore},
		{headSources,
			"trace from-streams since until",
			"kv-lookback requests-stream responses-stream kv-events-stream registry-bucket block-size skip-bad"},
		{headTargets,
			"workers device-blocks l3 l3-bandwidth kv-bytes-per-token",
			"alpha"},
		{headHints, "policies sweep", ""},
		{headOperation, "report json", "log-format log-level spool-dir"},
	},
	"bridge": {
		{headBus, "config " + natsShort, natsMore + " connect-timeout"},
		{headSources,
			"zmq-endpoint worker-id dp-rank replay-endpoint agent-events dynamo-zmq dynamo-namespace",
			"topic replay-from replay-timeout agent-events-topic dynamo-component dynamo-active-sequences dynamo-zmq-broker"},
		{headTargets,
			"kv-events-subjects subject update-streams",
			"kv-events-stream agent-events-stream publish-timeout"},
		{headLimits, "", "max-replay receive-hwm"},
		{headOperation, "log-format log-level", ""},
	},
	"streams": {
		{headBus, natsShort, natsMore},
		{headSources,
			"requests-subjects responses-subjects kv-events-subjects dynamo-namespace update-streams stream-replicas",
			"requests-stream responses-stream kv-events-stream load-stream load-subjects dynamo-component dynamo-active-sequences " +
				"dead-letter-stream dead-letter-prefix requests-max-age requests-max-bytes responses-max-age responses-max-bytes " +
				"stream-placement-tags"},
		{headOperation, "json strict", "timeout log-format log-level"},
	},
	"register": {
		{headBus, natsShort, natsMore + " connect-timeout"},
		{headSources, "worker-id sglang-url model kv-block-size", "registry-bucket via-hintstream"},
		{headTargets, "hint-endpoint hint-curve-public-key", ""},
		{headOperation, "check-config log-format", "log-level interval stale-max keep-on-exit"},
	},
}

// everyFlag is the output parseArgs gives fs.Usage for --help-all:
// printFlags then lists every flag, not the short list.
type everyFlag struct{ io.Writer }

// printFlags writes fs's flags as flag.PrintDefaults does. For a command
// in flagGroups it writes them under their headings: the short list, then
// a line pointing to --help-all and docs/configuration.md; with
// --help-all, every flag, those in no group under headOther.
func printFlags(fs *flag.FlagSet) {
	groups, grouped := flagGroups[fs.Name()]
	if !grouped {
		fs.PrintDefaults()
		return
	}
	w := fs.Output()
	_, all := w.(everyFlag)
	placed := map[string]bool{}
	shown := 0
	for _, g := range groups {
		names := strings.Fields(g.short)
		if all {
			names = append(names, strings.Fields(g.more)...)
		}
		for _, n := range strings.Fields(g.short + " " + g.more) {
			placed[n] = true
		}
		shown += printGroup(w, fs, g.heading, names)
	}
	if all {
		var rest []string
		fs.VisitAll(func(f *flag.Flag) {
			if !placed[f.Name] {
				rest = append(rest, f.Name)
			}
		})
		printGroup(w, fs, headOther, rest)
		return
	}
	total := 0
	fs.VisitAll(func(*flag.Flag) { total++ })
	fmt.Fprintf(w, "\nThese are the flags most often set. Every flag: \"hintstream %s --help-all\" (%d more); the full reference: docs/configuration.md.\n",
		fs.Name(), total-shown)
}

// printGroup writes heading and the flags of fs named in names (those
// fs does not define are left out; TestFlagGroups finds them), sorted
// and formatted as flag.PrintDefaults does, and returns how many.
func printGroup(w io.Writer, fs *flag.FlagSet, heading string, names []string) int {
	sub := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	sub.SetOutput(w)
	n := 0
	for _, name := range names {
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		sub.Var(f.Value, f.Name, f.Usage)
		sub.Lookup(f.Name).DefValue = f.DefValue // the default, not a value parsed before --help
		n++
	}
	if n > 0 {
		fmt.Fprintf(w, "\n%s:\n", heading)
		sub.PrintDefaults()
	}
	return n
}
