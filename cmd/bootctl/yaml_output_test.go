package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// jsonOf re-encodes a YAML document as compact JSON keeping its mapping keys in the document's
// order, so that a YAML result can be compared byte for byte with the JSON one: same fields, same
// order, same values.
func jsonOf(t *testing.T, n *yaml.Node) string {
	t.Helper()
	var sb strings.Builder
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.DocumentNode:
			walk(n.Content[0])
		case yaml.MappingNode:
			sb.WriteByte('{')
			for i := 0; i+1 < len(n.Content); i += 2 {
				if i > 0 {
					sb.WriteByte(',')
				}
				k, _ := json.Marshal(n.Content[i].Value)
				sb.Write(k)
				sb.WriteByte(':')
				walk(n.Content[i+1])
			}
			sb.WriteByte('}')
		case yaml.SequenceNode:
			sb.WriteByte('[')
			for i, c := range n.Content {
				if i > 0 {
					sb.WriteByte(',')
				}
				walk(c)
			}
			sb.WriteByte(']')
		case yaml.ScalarNode:
			if n.Tag == "!!str" {
				v, _ := json.Marshal(n.Value)
				sb.Write(v)
			} else {
				sb.WriteString(n.Value)
			}
		default:
			t.Fatalf("unexpected YAML node kind %v", n.Kind)
		}
	}
	walk(n)
	return sb.String()
}

// TestPlanSimulateYAML: plan and simulate take -o yaml, with the fields, order and values of their
// JSON; other formats are refused with exit 2 naming the supported ones.
func TestPlanSimulateYAML(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"plan", []string{"plan", "--topology", "mini", "--algo", "scda,bcda", "--batch", "1,2"}},
		{"plan flow", []string{"plan", "--topology", "mini", "--algo", "bcda", "--batch", "1", "--model", "flow"}},
		{"plan failed", []string{"plan", "--topology", "mini", "--algo", "bcda", "--batch", "2", "--failed-servers", "1"}},
		{"simulate", []string{"simulate", "--topology", "mini", "--batch", "2"}},
		{"simulate arrivals", []string{"simulate", "--topology", "mini", "--algo", "scda,bcda", "--batch", "1", "--arrival", "ramp:4"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, js, errs := bootctl(t, append(tc.args, "-o", "json")...)
			if code != 0 {
				t.Fatalf("-o json: exit %d: %s", code, errs)
			}
			code, ym, errs := bootctl(t, append(tc.args, "-o", "yaml")...)
			if code != 0 {
				t.Fatalf("-o yaml: exit %d: %s", code, errs)
			}
			if strings.HasPrefix(strings.TrimSpace(ym), "{") {
				t.Fatalf("-o yaml printed JSON:\n%.300s", ym)
			}
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(ym), &doc); err != nil {
				t.Fatalf("-o yaml is not YAML: %v\n%.300s", err, ym)
			}
			var want bytes.Buffer
			if err := json.Compact(&want, []byte(js)); err != nil {
				t.Fatal(err)
			}
			if got := jsonOf(t, &doc); got != want.String() {
				t.Errorf("YAML differs from JSON\n yaml as JSON %.600s\n json         %.600s", got, want.String())
			}
		})
	}
	for _, cmd := range []string{"plan", "simulate"} {
		code, out, errs := bootctl(t, cmd, "--topology", "mini", "-o", "xml")
		want := `--output: "xml" is not one of table, json, yaml, csv`
		if code != 2 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("%s -o xml: exit %d, stdout %q, stderr %q; want 2 and %q", cmd, code, out, errs, want)
		}
	}
}
