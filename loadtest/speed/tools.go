package speed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/nats-io/nats-server/v2/server"
)

// NatsCLIVersion is the natscli release whose `bench js ordered` flags
// and CSV NatsBench relies on.
const NatsCLIVersion = "v0.5.0"

// Binaries are the programs the measurements start.
type Binaries struct {
	Hintstream string // `go build ./cmd/hintstream`
	Floor      string // `go build ./loadtest/cmd/floor`
}

// RepoRoot is the directory holding the module's go.mod, found by walking
// up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.Contains(string(b), "module github.com/hintstream/hintstream\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("speed: no hintstream go.mod above the working directory")
		}
		dir = parent
	}
}

// Build compiles both binaries into binDir (created if needed) with the
// go command on PATH.
func Build(ctx context.Context, binDir string) (Binaries, error) {
	root, err := RepoRoot()
	if err != nil {
		return Binaries{}, err
	}
	if binDir, err = filepath.Abs(binDir); err != nil {
		return Binaries{}, err
	}
	b := Binaries{Hintstream: filepath.Join(binDir, "hintstream"), Floor: filepath.Join(binDir, "floor")}
	for out, pkg := range map[string]string{b.Hintstream: "./cmd/hintstream", b.Floor: "./loadtest/cmd/floor"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return Binaries{}, fmt.Errorf("speed: go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return b, nil
}

// EnsureNatsCLI returns binDir/nats, installing natscli NatsCLIVersion
// there with `go install` when it is absent or another version.
func EnsureNatsCLI(ctx context.Context, binDir string) (string, error) {
	binDir, err := filepath.Abs(binDir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(binDir, "nats")
	if out, err := exec.CommandContext(ctx, path, "--version").Output(); err == nil &&
		strings.TrimSpace(string(out)) == NatsCLIVersion {
		return path, nil
	}
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/nats-io/natscli/nats@"+NatsCLIVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+binDir)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("speed: install natscli %s: %v\n%s", NatsCLIVersion, err, msg)
	}
	return path, nil
}

// Server is an embedded nats-server with a JetStream file store, as
// hintstream's own embedded mode runs it.
type Server struct {
	srv *server.Server
	dir string // removed at Close when we made it
}

// StartServer starts one on a free loopback port with its store in dir
// (a fresh temporary directory, removed at Close, when dir is "").
func StartServer(dir string) (*Server, error) {
	s := &Server{}
	if dir == "" {
		d, err := os.MkdirTemp("", "hintstream-speed-")
		if err != nil {
			return nil, err
		}
		dir, s.dir = d, d
	}
	srv, err := natsembed.Start(natsembed.Options{StoreDir: dir, MaxPayload: 8 << 20})
	if err != nil {
		if s.dir != "" {
			os.RemoveAll(s.dir)
		}
		return nil, err
	}
	s.srv = srv
	return s, nil
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.srv.ClientURL() }

// Close shuts the server down and removes a store it made.
func (s *Server) Close() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// withServer runs f against url, or against a server of its own when url
// is "".
func withServer(url string, f func(url string) error) error {
	if url != "" {
		return f(url)
	}
	s, err := StartServer("")
	if err != nil {
		return err
	}
	defer s.Close()
	return f(s.URL())
}

// freeAddr returns a loopback address with a port free at the time of
// the call (the child binds it moments later).
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
