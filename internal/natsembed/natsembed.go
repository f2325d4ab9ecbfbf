// Package natsembed runs an in-process nats-server with JetStream, for
// `hintstream run` without --nats-url and for tests.
package natsembed

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configure the embedded server.
type Options struct {
	// StoreDir holds JetStream's file store. Required.
	StoreDir string
	// Host to listen on; default 127.0.0.1 (never a public interface).
	Host string
	// Port to listen on; -1 (the default when zero) picks a free port.
	Port int
	// MaxPayload overrides the server's max message size (default 1 MiB).
	MaxPayload int32
	// ServerName is the JetStream server name; default "hintstream-embedded".
	ServerName string
}

// Start starts the server and waits until it accepts connections.
// Callers stop it with Shutdown and WaitForShutdown.
func Start(o Options) (*server.Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natsembed: StoreDir is required")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = -1
	}
	if o.ServerName == "" {
		o.ServerName = "hintstream-embedded"
	}
	opts := &server.Options{
		ServerName: o.ServerName,
		Host:       o.Host,
		Port:       o.Port,
		JetStream:  true,
		StoreDir:   o.StoreDir,
		NoLog:      true,
		NoSigs:     true,
		MaxPayload: o.MaxPayload,
	}
	return run(opts, "server")
}

// run starts a server from opts and waits until it accepts connections.
func run(opts *server.Options, what string) (*server.Server, error) {
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	go s.Start()
	// Generous: a cluster node is ready only once its routes are up, which
	// on a loaded 2-core machine (the whole test suite at once) has taken
	// more than 10 s. A healthy single server is ready in milliseconds.
	const within = 60 * time.Second
	if !s.ReadyForConnections(within) {
		s.Shutdown()
		return nil, fmt.Errorf("natsembed: %s not ready within %v", what, within)
	}
	return s, nil
}
