package registry

import "context"

// Run keeps the view in step until ctx is cancelled, then stops the
// watcher (Stop) and returns nil: the watcher retries what fails
// (a lost watch, a server restart) rather than give up, so Run has no
// error of its own. Open starts the watcher; Run is its lifecycle under
// a caller's errgroup.
func (r *Registry) Run(ctx context.Context) error {
	<-ctx.Done()
	r.Stop()
	return nil
}
