package bootsrv

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/nodestate"
)

// cdp is a minimal Chrome DevTools Protocol client over --remote-debugging-pipe: requests go to
// the browser's fd 3 and answers and events come from its fd 4, each a JSON message ended by NUL.
type cdp struct {
	w io.Writer

	mu      sync.Mutex
	next    int
	pending map[int]chan cdpMsg
	// requests are the URLs the page asked for (Network.requestWillBeSent); problems are the
	// page's exceptions and console errors.
	requests []string
	problems []string
}

type cdpMsg struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId"`
}

func (c *cdp) read(r io.Reader) {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadBytes(0)
		if err != nil {
			c.mu.Lock()
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
		var m cdpMsg
		if json.Unmarshal(b[:len(b)-1], &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.pending[m.ID]; ok {
				ch <- m
				delete(c.pending, m.ID)
			}
		} else {
			c.event(m)
		}
		c.mu.Unlock()
	}
}

// event records what the test checks of the page's events; c.mu is held.
func (c *cdp) event(m cdpMsg) {
	switch m.Method {
	case "Network.requestWillBeSent":
		var p struct{ Request struct{ URL string } }
		if json.Unmarshal(m.Params, &p) == nil {
			c.requests = append(c.requests, p.Request.URL)
		}
	case "Runtime.exceptionThrown":
		c.problems = append(c.problems, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct{ Level, Text, URL string }
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Entry.Level == "error" {
			c.problems = append(c.problems, fmt.Sprintf("console: %s (%s)", p.Entry.Text, p.Entry.URL))
		}
	}
}

func (c *cdp) call(ctx context.Context, session, method string, params any, out any) error {
	ch := make(chan cdpMsg, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.pending[id] = ch
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	if _, err := c.w.Write(append(b, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	case m, ok := <-ch:
		if !ok {
			return fmt.Errorf("%s: the browser closed its pipe", method)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	}
}

// startChromium starts headless Chromium with its DevTools on pipes and stops its whole process
// group at cleanup. Host names other than loopback resolve to nothing: the page must need no
// network but its server's.
func startChromium(t *testing.T) *cdp {
	t.Helper()
	bin := testenv.NeedTool(t, "chromium", "chromium")
	toBrowser, browserIn, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	browserOut, fromBrowser, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--user-data-dir="+t.TempDir(), "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--mute-audio",
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, fromBrowser} // fds 3 and 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &limitedWriter{w: &stderr, left: 64 << 10}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toBrowser.Close()
	fromBrowser.Close()
	c := &cdp{w: browserIn, pending: map[int]chan cdpMsg{}}
	done := make(chan struct{})
	go func() { c.read(browserOut); close(done) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.call(ctx, "", "Browser.close", map[string]any{}, nil)
		cancel()
		browserIn.Close()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the browser's own group: its renderers too
			<-exited
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // any child left behind
		browserOut.Close()
		<-done
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", stderr.String())
		}
	})
	return c
}

// limitedWriter keeps the first left bytes written to it.
type limitedWriter struct {
	mu   sync.Mutex
	w    io.Writer
	left int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.left > 0 {
		q := p[:min(len(p), l.left)]
		l.left -= len(q)
		l.w.Write(q)
	}
	return len(p), nil
}

// TestWebPageBrowser: a real browser loads the boot page from a running server, shows every node
// on its board, and follows node00 through a boot driven over the server's own HTTP API (the
// script fetch from node00's address, then its health report), the curve counting it healthy;
// node01's failed report, markup a hostile node wrote, shows as text; every request the page made
// went to the server, and the page raised no error.
func TestWebPageBrowser(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) { c.TFTP.Listen = "off" })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srvCtx, stopSrv := context.WithCancel(ctx)
	if err := s.Listen(srvCtx); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(srvCtx) }()
	defer func() {
		stopSrv()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + s.HTTPAddr().String()
	nodes := len(s.tracker.Nodes())

	c := startChromium(t)
	var target struct{ TargetID string }
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		t.Fatal(err)
	}
	var att struct{ SessionID string }
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		t.Fatal(err)
	}
	sess := att.SessionID
	for _, domain := range []string{"Network.enable", "Runtime.enable", "Log.enable"} {
		if err := c.call(ctx, sess, domain, map[string]any{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.call(ctx, sess, "Page.navigate", map[string]any{"url": base + "/ui/"}, nil); err != nil {
		t.Fatal(err)
	}
	eval := func(expr string) (string, error) {
		var r struct {
			Result           struct{ Value any }
			ExceptionDetails *struct{ Text string }
		}
		if err := c.call(ctx, sess, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
			return "", err
		}
		if r.ExceptionDetails != nil {
			return "", errors.New(r.ExceptionDetails.Text)
		}
		return fmt.Sprint(r.Result.Value), nil
	}
	// waitPage waits until the page's expression gives want: the page updates once a second.
	waitPage := func(what, expr, want string) {
		t.Helper()
		var got string
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got, err = eval(expr); err == nil && got == want {
				return
			}
		}
		conn, _ := eval(`document.location.href + ": " + (document.querySelector("#conn") || {}).textContent`)
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("%s: the page gives %q (error %v), want %q; page %s; requests %q; problems %q", what, got, err, want, conn, c.requests, c.problems)
	}
	waitPage("nodes shown", `String(document.querySelectorAll("#groups [data-node]").length)`, fmt.Sprint(nodes))
	waitPage("node00 before its boot", `document.querySelector('[data-node="node00"]').dataset.state`, "pending")
	waitPage("boards", `document.querySelector("#groups").dataset.layout + " " + document.querySelectorAll("#groups .group").length + " " + document.querySelector('[data-node="node00"]').closest(".group").dataset.group`, "board 8 s0-b0")
	waitPage("connection", `document.querySelector("#conn").dataset.conn`, "live")

	// node00 (127.0.0.1) fetches its script: with DHCP off that opens its boot (nbp).
	script := httpDo(t, "GET", base+"/ipxe/52:54:00:00:00:00", "", http.StatusOK)
	waitPage("node00 after its script", `document.querySelector('[data-node="node00"]').dataset.state`, "nbp")
	m := regexp.MustCompile(`bootfabric\.health=(\S+)`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("no health URL in node00's script:\n%s", script)
	}
	reported := time.Now()
	httpDo(t, "POST", m[1], `{"status":"ok"}`, http.StatusOK)
	waitPage("node00 after its report", `document.querySelector('[data-node="node00"]').dataset.state`, "healthy")
	t.Logf("the page showed node00 healthy %v after its report (the streams look once per %v)", time.Since(reported).Round(time.Millisecond), webPoll)
	waitPage("summary", `document.querySelector('#summary [data-state="healthy"]').dataset.nodes`, "1")
	waitPage("curve", `document.querySelector("#curve .measured").dataset.healthy`, "1")

	// A failed node's error is text a node wrote: the page shows it as text, never as markup.
	if _, _, err := s.tracker.Observe("node01", nodestate.EvDiscover, "test: a boot attempt"); err != nil {
		t.Fatal(err)
	}
	hostile := `"<img src=x onerror=\"document.title='owned'\"><script>document.title='owned'</script>"`
	if _, err := s.tracker.Report("node01", nodestate.Health{Status: "failed", Details: json.RawMessage(hostile)}); err != nil {
		t.Fatal(err)
	}
	waitPage("node01 after its failed report", `document.querySelector('[data-node="node01"]').dataset.state`, "failed")
	waitPage("node01's error as text", `document.querySelectorAll("body img, main script").length + " " + document.querySelector('#failed [data-node="node01"] .error').textContent.includes("<img src=x") + " " + document.title`,
		"0 true bootfabric: bs0")

	// A bootctl boot run tells the server its prediction: the page draws it dashed, and the
	// measured curve becomes the run's nodes' since its start (node00, healthy before it, is not).
	if _, err := (&bootapi.Client{BaseURL: base}).AnnounceRun(ctx, &bootapi.RunPrediction{Run: "boot.journal",
		Nodes: []bootapi.RunNode{{Name: "node00", HealthyAt: 20}, {Name: "node01", HealthyAt: 25}, {Name: "node02", HealthyAt: 30}}},
		string(s.operatorToken)); err != nil {
		t.Fatal(err)
	}
	waitPage("the run's prediction", `document.querySelector("#prediction-note").dataset.predicted + " " + document.querySelectorAll("#curve .predicted").length + " " + document.querySelector("#curve .measured").dataset.healthy`, "3 1 0")
	if _, _, err := s.tracker.Observe("node02", nodestate.EvDiscover, "test: the run's boot"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.tracker.Report("node02", nodestate.Health{Status: "ok"}); err != nil {
		t.Fatal(err)
	}
	waitPage("the run's node healthy", `document.querySelector("#curve .measured").dataset.healthy + " " + document.querySelector("#curve-note").textContent.startsWith("1 of 3 nodes of the run healthy, 1 failed")`, "1 true")

	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) < 3 {
		t.Errorf("the page made %d requests (%q), want at least its HTML, script, style and events", len(c.requests), c.requests)
	}
	for _, u := range c.requests {
		if !strings.HasPrefix(u, base+"/") {
			t.Errorf("the page asked for %s: everything must come from the server (%s)", u, base)
		}
	}
	for _, p := range c.problems {
		t.Errorf("page problem: %s", p)
	}
}

// httpDo makes a request from loopback (node00's address) and checks its status.
func httpDo(t *testing.T, method, url, body string, code int) string {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != code {
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, code)
	}
	return string(b)
}
