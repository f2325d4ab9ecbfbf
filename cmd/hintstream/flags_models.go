package main

import (
	"flag"
	"fmt"
	"slices"
)

// modelsFlag registers --models, shared by run and replay (a replay of a
// member serving only some models must make that member's choices); the
// returned func gives the parsed list (nil: every model).
func modelsFlag(fs *flag.FlagSet) func() ([]string, error) {
	models := fs.String("models", "", "comma-separated models this member serves: it consumes only their requests and responses, indexes only their workers' KV events and chooses only among their workers (one consumer group per model family); empty: every model")
	return func() ([]string, error) {
		ms := split(*models)
		if slices.Contains(ms, "") {
			return nil, fmt.Errorf("--models: empty model name")
		}
		return ms, nil
	}
}
