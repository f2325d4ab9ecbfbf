package e2e

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestComposeDynamoFile: deploy/dynamo's compose file (no container
// engine runs here, so it is read): hintstream's command passes the
// binary's own --check-config with --source dynamo, its pin endpoint is
// the stand-in's pin socket, the stand-in's flags are those
// examples/dynamo defines, and both builds name files that exist.
func TestComposeDynamoFile(t *testing.T) {
	services := readComposeAt(t, "../deploy/dynamo/docker-compose.yml")
	hs, dyn := services["hintstream"], services["dynamo"]
	if !slices.Contains(hs.Command, "--source") || hs.Command[slices.Index(hs.Command, "--source")+1] != "dynamo" {
		t.Fatalf("hintstream does not read the request trace: %v", hs.Command)
	}
	out, err := exec.Command(binary, append(hs.Command, "--check-config")...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "configuration ok") {
		t.Fatalf("%v: %v\n%s", hs.Command, err, out)
	}
	pin := hs.Command[slices.Index(hs.Command, "--pin-endpoint")+1]
	port := dyn.Command[slices.Index(dyn.Command, "--pin-port")+1]
	if pin != "tcp://dynamo:"+port {
		t.Errorf("hintstream pins at %s, the stand-in binds port %s", pin, port)
	}
	if d, ok := dyn.DependsOn["hintstream"]; !ok || d.Condition != "service_healthy" {
		t.Errorf("the stand-in must wait for hintstream, which creates the streams it publishes into: %+v", dyn.DependsOn)
	}
	main, err := os.ReadFile("../examples/dynamo/main.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range dyn.Command {
		if name, ok := strings.CutPrefix(a, "--"); ok && !strings.Contains(string(main), `"`+name+`"`) {
			t.Errorf("the stand-in has no flag --%s", name)
		}
	}
	for _, s := range []composeService{hs, dyn} {
		if s.Build == nil {
			t.Fatal("a service without its build")
		}
		df := "../deploy/dynamo/" + s.Build.Context + "/" + s.Build.Dockerfile
		if _, err := os.Stat(df); err != nil {
			t.Errorf("build file: %v", err)
		}
	}
}
