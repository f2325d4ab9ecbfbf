package lmcachepin_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/standin"
)

// The stand-in refuses what the controller refuses, so a test passing
// against it means something.
func TestControllerStandInRefuses(t *testing.T) {
	c := standin.NewLMCacheController(time.Minute, "inst")
	defer c.Close()
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[1,2]}`, 200},
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[1,2],"ttl":5}`, 200}, // unknown field: ignored
		{`{"location":"LocalCPUBackend","tokens":[1]}`, 422},                                // missing instance_id
		{`{"instance_id":"inst","tokens":[1]}`, 422},                                        // missing location
		{`{"instance_id":7,"location":"LocalCPUBackend","tokens":[1]}`, 422},                // wrong type
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":"1,2"}`, 422},         // not a list
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[true]}`, 422},        // not ints
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[1.5]}`, 422},
		{`[1,2]`, 422},
		{`{"instance_id":"other","location":"LocalCPUBackend","tokens":[1]}`, 500}, // unknown instance
	} {
		resp, err := http.Post(c.URL+"/pin", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.body, resp.StatusCode, tc.want)
		}
	}
	if calls := c.Pins(); len(calls) != 2 || len(calls[1].Unknown) != 1 || !c.Pinned("inst", []uint32{1, 2}) {
		t.Fatalf("calls %+v", calls)
	}
}
