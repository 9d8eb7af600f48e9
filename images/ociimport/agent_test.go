package ociimport

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/testenv"
)

// TestImportAgent: with a busybox the archive ends with the agent (its directory, busybox,
// /dev/console when the image has none, the DHCP script and /init, replacing any /init of the
// image), and its scripts parse.
func TestImportAgent(t *testing.T) {
	testenv.NeedFile(t, images.DefaultBusybox, "busybox-static")
	dir := t.TempDir()
	src := writeLayout(t, dir, testImage(t, bootLayer, []te{te{name: "init", data: "#!/bin/sh\n# the image's own\n", mode: 0o755}}))
	st, res, err := importInto(t, dir, Options{Source: src, Busybox: images.DefaultBusybox})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Agent {
		t.Error("result: no agent")
	}
	initrd, _ := st.BlobPath("test", res.Profile.Initrd)
	got := readCpio(t, initrd)
	bb, _ := os.ReadFile(images.DefaultBusybox)
	tail := got[len(got)-6:]
	want := []entry{
		{Name: ".bootfabric", Mode: "40755", Owner: "0:0", Nlink: 2},
		{Name: ".bootfabric/busybox", Mode: "100755", Owner: "0:0", Nlink: 1, Data: string(bb)},
		{Name: "dev", Mode: "40755", Owner: "0:0", Nlink: 2},
		{Name: "dev/console", Mode: "20600", Owner: "0:0", Nlink: 1, Dev: "5:1"},
		{Name: ".bootfabric/udhcpc.script", Mode: "100755", Owner: "0:0", Nlink: 1, Data: images.AgentDHCPScript(agentLayout())},
		{Name: "init", Mode: "100755", Owner: "0:0", Nlink: 1, Data: images.AgentInit(agentLayout())},
	}
	for i := range want {
		if tail[i] != want[i] {
			t.Errorf("entry %d from the end: %s (%d bytes), want %s", len(want)-i, tail[i].Name, len(tail[i].Data), want[i].Name)
		}
	}
	// With a module: it goes under the agent's directory, listed in modules.order.
	ko := filepath.Join(dir, "virtio_net.ko")
	os.WriteFile(ko, []byte("\x7fELF fake module"), 0o644)
	st, res, err = importInto(t, filepath.Join(dir, "m"), Options{Source: src, Busybox: images.DefaultBusybox, Modules: []string{ko}})
	if err != nil {
		t.Fatal(err)
	}
	initrd, _ = st.BlobPath("test", res.Profile.Initrd)
	files := map[string]entry{}
	for _, e := range readCpio(t, initrd) {
		files[e.Name] = e
	}
	if files[".bootfabric/modules/virtio_net.ko"].Data != "\x7fELF fake module" || files[".bootfabric/modules.order"].Data != "virtio_net.ko\n" ||
		files[".bootfabric/modules"].Mode != "40755" {
		t.Errorf("modules: %+v", files)
	}
	if _, _, err := importInto(t, filepath.Join(dir, "n"), Options{Source: src, Modules: []string{ko}}); err == nil {
		t.Error("modules without the agent: no error")
	}
	for name, script := range map[string]string{"init": images.AgentInit(agentLayout()), "udhcpc.script": images.AgentDHCPScript(agentLayout())} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(script), 0o755)
		if out, err := exec.Command(images.DefaultBusybox, "sh", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("%s does not parse: %v\n%s", name, err, out)
		}
	}
}
