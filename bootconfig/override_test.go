package bootconfig

import "testing"

// TestOverride: each key sets its own field and no other; an unknown key is an error.
func TestOverride(t *testing.T) {
	for _, tc := range []struct {
		key string
		get func(*Config) string
	}{
		{"http.listen", func(c *Config) string { return c.HTTP.Listen }},
		{"tftp.root", func(c *Config) string { return c.TFTP.Root }},
		{"dhcp.mode", func(c *Config) string { return string(c.DHCP.Mode) }},
		{"state_dir", func(c *Config) string { return c.StateDir }},
		{"http.operator_token_file", func(c *Config) string { return c.HTTP.OperatorTokenFile }},
	} {
		var c Config
		if err := c.Override(tc.key, "v1"); err != nil || tc.get(&c) != "v1" {
			t.Errorf("%s: %v, field %q", tc.key, err, tc.get(&c))
		}
		if c.Profile != "" || c.Images != "" {
			t.Errorf("%s set another field: %+v", tc.key, c)
		}
	}
	var c Config
	if err := c.Override("server_id", "1"); err == nil {
		t.Error("server_id: no error")
	}
}
