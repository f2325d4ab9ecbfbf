package main

import (
	"fmt"

	"github.com/hintstream/hintstream/internal/demo"
)

// demoMaster binds the demo's simulated Mooncake master when `run --demo`
// has no pin endpoint (--pin-endpoint, DYN_KVM_PIN_ENDPOINT) and points
// the pin endpoint at it, so that `make run` shows tool-call pins too. It
// returns nil without --demo, or when a real pin endpoint is set. The
// caller gives the master to the demo (which closes it) or closes it.
func demoMaster(demoOn bool, pinEndpoint *string) (*demo.Master, error) {
	if !demoOn || *pinEndpoint != "" {
		return nil, nil
	}
	m, err := demo.NewMaster("127.0.0.1")
	if err != nil {
		return nil, fmt.Errorf("demo: Mooncake master: %w", err)
	}
	*pinEndpoint = m.Endpoint()
	return m, nil
}
