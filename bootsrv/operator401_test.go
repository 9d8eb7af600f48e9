package bootsrv

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperator401HidesPaths: the operator API's 401 named the token file's path, telling any
// client where the server keeps its state (issue 25). It says what to send and names only the
// setting.
func TestOperator401HidesPaths(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	h := s.Handler()
	for _, tc := range []struct{ name, auth string }{
		{"no token", ""},
		{"wrong token", "Bearer wrong-token-0123456789"},
		{"not a bearer", "Basic b3BlcmF0b3I6eA=="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/api/v1/nodes/node00/reboot", nil)
			req.RemoteAddr = "127.0.0.1:1"
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401: %s", w.Code, w.Body)
			}
			body := w.Body.String()
			for _, secret := range []string{s.cfg.HTTP.OperatorTokenFile, filepath.Base(s.cfg.HTTP.OperatorTokenFile), s.cfg.StateDir, f.dir} {
				if secret != "" && strings.Contains(body, secret) {
					t.Errorf("the 401 names %q: %s", secret, body)
				}
			}
			if !strings.Contains(body, "operator token required") || !strings.Contains(body, "Authorization: Bearer") {
				t.Errorf("the 401 does not say what to send: %s", body)
			}
			if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
				t.Errorf("WWW-Authenticate %q", got)
			}
		})
	}
}
