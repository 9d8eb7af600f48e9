package testcluster

import "testing"

// TestTroubleLines: a failed fleet test shows a server's warnings and errors, and its first
// refusal of each node, not the DHCP traffic nor the refusals that name no node.
func TestTroubleLines(t *testing.T) {
	log := "t1\tdebug\tdhcp\tDHCP request\t{\"node\": \"n1\"}\n" +
		"t2\tinfo\ttftp\ttftp transfer failed\t{\"remote\": \"10.0.0.9:1\", \"node\": \"n1\", \"outcome\": \"refused\", \"error\": \"server busy: a\"}\n" +
		"t3\tinfo\ttftp\ttftp transfer failed\t{\"remote\": \"10.0.0.9:2\", \"node\": \"n1\", \"outcome\": \"refused\", \"error\": \"server busy: b\"}\n" +
		"t4\tinfo\ttftp\ttftp transfer failed\t{\"remote\": \"10.9.9.9:1\", \"outcome\": \"refused\"}\n" +
		"t5\twarn\tfleet\tlease lost\t{}\n"
	want := "t5\twarn\tfleet\tlease lost\t{}\n" +
		"t2\tinfo\ttftp\ttftp transfer failed\t{\"remote\": \"10.0.0.9:1\", \"node\": \"n1\", \"outcome\": \"refused\", \"error\": \"server busy: a\"}"
	if got := troubleLines(log); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
