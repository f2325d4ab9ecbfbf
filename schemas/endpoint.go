package schemas

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Endpoint validation. A worker record names the ZeroMQ endpoints
// hintstream connects to, and every one costs a socket and, while it is
// registered, metric series: the registry accepts only endpoints another
// process can actually serve. Refusals carry a stable Reason, counted as
// registry_invalid_records_total{reason}.
const (
	// MaxEndpointLen is the longest endpoint accepted, in bytes: enough
	// for any host name (253) with scheme and port.
	MaxEndpointLen = 256
	// DefaultMaxDPRanks is EndpointRules.MaxDPRanks' default: the most
	// hint_endpoints (one per dp rank) a record may list.
	DefaultMaxDPRanks = 1024
)

// Reasons a worker record is refused (RecordError.Reason). They are
// metric label values: add new ones, never build one from input.
const (
	ReasonBlockSize        = "bad_block_size"
	ReasonNoEndpoints      = "no_endpoints"
	ReasonTooManyEndpoints = "too_many_endpoints" // more than MaxDPRanks
	ReasonCurveKey         = "bad_curve_key"
	ReasonEndpointTooLong  = "endpoint_too_long" // over MaxEndpointLen bytes
	ReasonInproc           = "inproc_endpoint"   // only this process could bind it
	ReasonIPCNotAllowed    = "ipc_not_allowed"   // ipc:// without AllowIPC
	ReasonBadScheme        = "bad_scheme"        // not tcp:// or ipc://
	ReasonBadHost          = "bad_host"
	ReasonWildcardHost     = "wildcard_host" // *, 0.0.0.0, :: : a bind address, not a peer
	ReasonBadPort          = "bad_port"      // missing, not decimal, or outside 1..65535
)

// RecordError says why a worker record was refused.
type RecordError struct {
	WorkerID uint64
	Reason   string // a Reason* constant
	Detail   string // for people; may quote (a prefix of) the input
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("worker %d: %s", e.WorkerID, e.Detail)
}

func recordErr(w *WorkerRecord, reason, detail string) error {
	return &RecordError{WorkerID: w.WorkerID, Reason: reason, Detail: detail}
}

// EndpointRules say which hint endpoints a worker record may name. The
// zero value is the default: tcp:// only, DefaultMaxDPRanks endpoints.
type EndpointRules struct {
	// AllowIPC accepts ipc:// endpoints (--allow-ipc-endpoints): they
	// work only when hintstream runs on the worker's host, so they are off
	// unless asked for.
	AllowIPC bool
	// MaxDPRanks bounds a record's hint_endpoints; default
	// DefaultMaxDPRanks (0 or negative: the default).
	MaxDPRanks int
}

func (r EndpointRules) withDefaults() EndpointRules {
	if r.MaxDPRanks <= 0 {
		r.MaxDPRanks = DefaultMaxDPRanks
	}
	return r
}

// CheckEndpoint reports why ep is not an acceptable endpoint under r (a
// Reason* constant and an explanation), or "" when it is.
func (r EndpointRules) CheckEndpoint(ep string) (reason, why string) {
	return r.withDefaults().check(ep)
}

func (r EndpointRules) check(ep string) (reason, why string) {
	if len(ep) > MaxEndpointLen {
		return ReasonEndpointTooLong, fmt.Sprintf("%d bytes, more than %d", len(ep), MaxEndpointLen)
	}
	scheme, rest, ok := strings.Cut(ep, "://")
	switch {
	case !ok:
		return ReasonBadScheme, "not a tcp:// or ipc:// ZMQ endpoint"
	case scheme == "inproc":
		return ReasonInproc, "inproc:// endpoints exist only inside one process"
	case scheme == "ipc":
		if !r.AllowIPC {
			return ReasonIPCNotAllowed, "ipc:// endpoints need --allow-ipc-endpoints"
		}
		if rest == "" || rest == "*" {
			return ReasonBadHost, "ipc:// endpoint without a path"
		}
		return "", ""
	case scheme != "tcp":
		return ReasonBadScheme, "not a tcp:// or ipc:// ZMQ endpoint"
	}
	return checkTCP(rest)
}

// checkTCP checks host:port, host a name, an IPv4 address or a bracketed
// IPv6 address. ZMQ's "source;peer" form is refused: hintstream has no
// reason to pick a worker's source address.
func checkTCP(hostport string) (reason, why string) {
	i := strings.LastIndexByte(hostport, ':')
	if i < 0 {
		return ReasonBadPort, "no port"
	}
	host, port := hostport[:i], hostport[i+1:]
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 || port[0] == '+' {
		return ReasonBadPort, "port must be a number in 1..65535"
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
		ip := net.ParseIP(host)
		if ip == nil || !strings.Contains(host, ":") {
			return ReasonBadHost, "not an IPv6 address in brackets"
		}
		if ip.IsUnspecified() {
			return ReasonWildcardHost, "a wildcard address cannot be connected to"
		}
		return "", ""
	}
	if host == "*" {
		return ReasonWildcardHost, "a wildcard address cannot be connected to"
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() {
			return ReasonWildcardHost, "a wildcard address cannot be connected to"
		}
		if ip.To4() == nil {
			return ReasonBadHost, "an IPv6 address must be in brackets"
		}
		return "", ""
	}
	if !validHostName(host) {
		return ReasonBadHost, "not a host name or IP address"
	}
	return "", ""
}

// validHostName: 1..253 bytes of letters, digits, '-', '_' and '.' (the
// underscore for Kubernetes and Docker names), no empty label.
func validHostName(h string) bool {
	h = strings.TrimSuffix(h, ".") // fully qualified
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
