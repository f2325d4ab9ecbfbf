package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultHealthcheckTimeout bounds one `hintstream healthcheck`, well
// inside Docker's and Compose's default 30s healthcheck timeout.
const DefaultHealthcheckTimeout = 3 * time.Second

// errUnhealthy marks an answer other than 200 (the exit code is 1 either way).
var errUnhealthy = errors.New("unhealthy")

// healthcheckCmd asks a running instance's /readyz (or --path) once and
// succeeds on 200 alone. It is the container's HEALTHCHECK: the image has
// no shell, curl or wget, and needs none. Kubernetes probes the same
// endpoints with its own httpGet and does not use it.
func healthcheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	checked := false // flags parsed and valid: later errors are not usage errors (exit 1, not 2)
	defer usageUntil(&checked, &err)
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", env("HINTSTREAM_HTTP_ADDR", "127.0.0.1:9090"), "the instance's --http-addr, host:port, :port or URL (env HINTSTREAM_HTTP_ADDR)")
	path := fs.String("path", "/readyz", "endpoint to ask: /readyz (caught up) or /healthz (serving)")
	timeout := fs.Duration("timeout", DefaultHealthcheckTimeout, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream healthcheck [flags]\n\nExits 0 when the instance answers 200, 1 otherwise (2: bad flags).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", *timeout)
	}
	if !strings.HasPrefix(*path, "/") {
		return fmt.Errorf("--path %q must start with /", *path)
	}
	checked = true
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	url := baseURL(*addr) + *path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", errUnhealthy, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s: %s %s", errUnhealthy, url, resp.Status, msg)
	}
	fmt.Fprintf(stdout, "%s: %s\n", url, msg)
	return nil
}
