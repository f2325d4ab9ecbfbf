package main

import (
	"context"
	"flag"
	"log/slog"

	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/state/registry"
)

// registrationFlag registers --registration-prefix: where this member
// answers workers that ask it to store their record (register
// --via-hintstream). The returned func starts the answering once the
// service runs and returns what waits for it to stop.
func registrationFlag(fs *flag.FlagSet) func(ctx context.Context, svc *service.Service, log *slog.Logger) (wait func(), err error) {
	prefix := fs.String("registration-prefix", registry.DefaultRegisterPrefix,
		"subject prefix on which workers ask this member to store their registry record (<prefix>.<worker id>); empty: off")
	return func(ctx context.Context, svc *service.Service, log *slog.Logger) (func(), error) {
		if *prefix == "" || svc.Registry() == nil {
			return func() {}, nil
		}
		w, err := registry.NewWriter(svc.JetStream().Conn(), svc.JetStream(), svc.Registry(), *prefix, log)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := w.Run(ctx); err != nil {
				log.Error("worker registrations not answered", "err", err)
			}
		}()
		return func() { cancel(); <-done }, nil
	}
}
