package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hintstream/hintstream/observe"
)

const inspectUsage = `Usage: hintstream inspect [--addr HOST:PORT] [--json] COMMAND [flags]

Asks a running instance (its --http-addr) what it sees:

  workers    the registry: each worker's endpoints, load and staleness per dp rank
  index      the KV index's size, dropped events and stale workers
  overlap    the worker choice for a prompt: --model M and --tokens 1,2,3 or
             --tokens-file F (a JSON array of token ids, "-" for stdin)
  tooltime   the learned tool times (tool-call pins must be on)
  outcomes   the last agent hints (prefetches, pins) and their fate (run --agents)

Flags (before or after COMMAND):
`

// inspectFlags are the flags every inspect command takes.
type inspectFlags struct {
	addr    string
	json    bool
	timeout time.Duration
}

func (f *inspectFlags) register(fs *flag.FlagSet) {
	def := env("HINTSTREAM_HTTP_ADDR", "127.0.0.1:9090")
	fs.StringVar(&f.addr, "addr", def, "the instance's --http-addr, host:port or URL (env HINTSTREAM_HTTP_ADDR)")
	fs.BoolVar(&f.json, "json", false, "print the raw JSON answer")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "give up after this long")
}

// inspectCmd queries the /v1/ API of a running instance.
func inspectCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	var common inspectFlags
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), inspectUsage); fs.PrintDefaults() }
	common.register(fs)
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fmt.Fprint(stderr, inspectUsage)
		return errors.New("missing command: workers, index, overlap, tooltime or outcomes")
	}
	what := fs.Arg(0)
	switch what {
	case "workers", "index", "tooltime", "overlap", "outcomes":
	default:
		if why, ok := removedCommands["inspect "+what]; ok { // removed.go
			return fmt.Errorf("inspect %s was removed: %s", what, why)
		}
		return fmt.Errorf("unknown command %q: want workers, index, overlap, tooltime or outcomes", what)
	}
	sub := flag.NewFlagSet("inspect "+what, flag.ContinueOnError)
	sub.SetOutput(stderr)
	// The subcommand's flags default to what came before it (registering
	// them again resets the shared variables to the defaults).
	before := common
	common.register(sub)
	common = before
	var model, tokens, tokensFile *string
	if what == "overlap" {
		model = sub.String("model", "", "the request's model (empty: every worker)")
		tokens = sub.String("tokens", "", "the prompt's token ids, comma-separated")
		tokensFile = sub.String("tokens-file", "", `file holding the prompt's token ids as a JSON array ("-": stdin)`)
	}
	if err := parseArgs(sub, fs.Args()[1:], stdout, stderr); err != nil {
		return err
	}
	if sub.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", sub.Args())
	}
	var ids []uint32
	if what == "overlap" {
		if ids, err = readTokens(*tokens, *tokensFile); err != nil {
			return err
		}
	}
	checked = true
	c := &inspectClient{base: baseURL(common.addr), http: &http.Client{Timeout: common.timeout}}
	ctx, cancel := context.WithTimeout(ctx, common.timeout)
	defer cancel()

	switch what {
	case "workers":
		return inspectGet(ctx, c, "/v1/workers", common.json, stdout, printWorkers)
	case "index":
		return inspectGet(ctx, c, "/v1/index", common.json, stdout, printIndex)
	case "tooltime":
		return inspectGet(ctx, c, "/v1/tooltime", common.json, stdout, printToolTime)
	case "outcomes":
		return inspectGet(ctx, c, "/v1/outcomes", common.json, stdout, printOutcomes)
	case "overlap":
		body, err := json.Marshal(observe.OverlapRequest{Model: *model, TokenIDs: ids})
		if err != nil {
			return err
		}
		raw, err := c.do(ctx, http.MethodPost, "/v1/overlap", body)
		if err != nil {
			return err
		}
		return show(raw, common.json, stdout, printOverlap)
	}
	return nil // unreachable: what was checked above
}

// baseURL accepts host:port, :port (this host) or a URL.
func baseURL(addr string) string {
	if strings.HasPrefix(addr, "http://") || strings.HasPrefix(addr, "https://") {
		return strings.TrimRight(addr, "/")
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr
}

type inspectClient struct {
	base string
	http *http.Client
}

// do sends one request and returns the body of a 200 answer; any other
// status becomes an error carrying the instance's message.
func (c *inspectClient) do(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach hintstream at %s (is it running with --http-addr?): %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode == http.StatusOK {
		return raw, nil
	}
	var e observe.ErrorView
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		return nil, fmt.Errorf("%s: %s (HTTP %d)", path, e.Error, resp.StatusCode)
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s does not serve %s: an older hintstream?", c.base, path)
	}
	return nil, fmt.Errorf("%s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(raw)))
}

func inspectGet[T any](ctx context.Context, c *inspectClient, path string, raw bool, w io.Writer, print func(io.Writer, T)) error {
	body, err := c.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	return show(body, raw, w, print)
}

func show[T any](body []byte, raw bool, w io.Writer, print func(io.Writer, T)) error {
	if raw {
		_, err := w.Write(body)
		return err
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("unexpected answer: %w", err)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	print(tw, v)
	return tw.Flush()
}

// readTokens takes the prompt from --tokens or --tokens-file, exactly one.
func readTokens(list, file string) ([]uint32, error) {
	switch {
	case list != "" && file != "":
		return nil, errors.New("give --tokens or --tokens-file, not both")
	case list != "":
		parts := strings.Split(list, ",")
		out := make([]uint32, 0, len(parts))
		for _, p := range parts {
			v, err := strconv.ParseUint(strings.TrimSpace(p), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("--tokens: %q is not a token id", p)
			}
			out = append(out, uint32(v))
		}
		return out, nil
	case file != "":
		var data []byte
		var err error
		if file == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return nil, fmt.Errorf("--tokens-file: %w", err)
		}
		var out []uint32
		if err := json.Unmarshal(data, &out); err != nil {
			return nil, fmt.Errorf("--tokens-file %s: want a JSON array of token ids: %w", file, err)
		}
		return out, nil
	}
	return nil, errors.New("overlap needs the prompt: --tokens 1,2,3 or --tokens-file F")
}

func printWorkers(w io.Writer, v observe.WorkersView) {
	if len(v.Workers) == 0 {
		fmt.Fprintln(w, "no registered workers")
		return
	}
	fmt.Fprintln(w, "WORKER\tMODEL\tBLOCK\tRANK\tENDPOINT\tPREFILL_TOKENS\tDECODE_BLOCKS\tUSED_BLOCKS\tSTALE\tLAYOUT\tCURVE")
	for _, wk := range v.Workers {
		if len(wk.Ranks) == 0 {
			fmt.Fprintf(w, "%d\t%s\t%d\t-\t(no endpoints)\t\t\t\t\t%s\t%s\n", wk.WorkerID, wk.Model, wk.KvBlockSize,
				yesNo(wk.HasObjectLayout), yesNo(wk.HasCurveKey))
		}
		for _, r := range wk.Ranks {
			fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", wk.WorkerID, wk.Model, wk.KvBlockSize,
				r.DpRank, r.Endpoint, opt(r.Load.ActivePrefillTokens), opt(r.Load.ActiveDecodeBlocks),
				opt(r.Load.KvUsedBlocks), yesNo(r.Stale), yesNo(wk.HasObjectLayout), yesNo(wk.HasCurveKey))
		}
	}
}

func printIndex(w io.Writer, v observe.IndexView) {
	stale := make([]string, len(v.StaleWorkers))
	for i, k := range v.StaleWorkers {
		stale[i] = fmt.Sprintf("%d/%d", k.WorkerID, k.DpRank)
	}
	for _, row := range []struct {
		k string
		v any
	}{
		{"workers (worker/dp rank)", v.Workers}, {"device blocks", v.DeviceBlocks},
		{"other tier blocks", v.OtherTierBlocks}, {"hashes", v.Hashes},
		{"event id gaps", v.Gaps}, {"out of order", v.OutOfOrder}, {"unknown parent", v.UnknownParent},
		{"unknown removals", v.UnknownRemovals}, {"cleared", v.Cleared}, {"dropped (index full)", v.DroppedFull},
		{"stale workers", strings.Join(append([]string{strconv.Itoa(len(stale))}, stale...), " ")},
		{"complete", completeness(v)},
	} {
		fmt.Fprintf(w, "%s\t%v\n", row.k, row.v)
	}
}

// completeness is "yes", or "no: " and why.
func completeness(v observe.IndexView) string {
	if v.Complete {
		return "yes"
	}
	return "no: " + v.IncompleteReason
}

func printOverlap(w io.Writer, v observe.OverlapView) {
	if v.Chosen == nil {
		fmt.Fprintf(w, "model %q, %d tokens: no choice: %s\n", v.Model, v.Tokens, v.Reason)
	} else {
		fmt.Fprintf(w, "model %q, %d tokens: chosen worker %d dp rank %d\n", v.Model, v.Tokens, v.Chosen.WorkerID, v.Chosen.DpRank)
	}
	if len(v.Candidates) == 0 {
		return
	}
	fmt.Fprintln(w, "\tWORKER\tRANK\tBLOCK\tOVERLAP\tHOST/DISK/EXT\tPREFILL\tCREDIT\tDECODE\tVIRTUAL\tLOGIT\tENDPOINT")
	for _, c := range v.Candidates {
		mark := ""
		if c.Chosen {
			mark = "*"
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d/%d/%d\t%g\t%g\t%g\t%g\t%g\t%s\n", mark, c.WorkerID, c.DpRank, c.BlockSize,
			c.OverlapBlocks, c.HostPinnedBlocks, c.DiskBlocks, c.ExternalBlocks, c.PrefillBlocks, c.OverlapCredit,
			c.DecodeBlocks, c.VirtualBlocks, c.Logit, c.Endpoint)
	}
}

func printToolTime(w io.Writer, v observe.ToolTimeView) {
	fmt.Fprintln(w, "TOOL\tSAMPLES\tP50\tP90\tEXPECTED\tSOURCE")
	for _, t := range v.Tools {
		name := t.Tool
		if name == "" {
			name = "(any tool)"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\n", name, t.Samples, secs(t.P50Seconds), secs(t.P90Seconds),
			secs(t.EstimateSeconds), t.Source)
	}
}

func secs(s float64) string { return time.Duration(s * float64(time.Second)).String() }

func opt(p *uint64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatUint(*p, 10)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
