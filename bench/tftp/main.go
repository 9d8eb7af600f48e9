// Command tftpbench serves a directory with bootfabric's tftpd and loads a
// TFTP server with concurrent clients: the pin/tftp client in process
// (lock-step), or atftp processes (which negotiate RFC 7440 windowsize).
// bench/tftp/run.sh drives it.
//
//	tftpbench serve -addr 127.0.0.1:6969 -root DIR
//	tftpbench load -addr 127.0.0.1:6969 -file NAME -sha256 HEX -clients 64 -blksize 1468 [-client atftp -windowsize 4]
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/tftpd"
	"github.com/pin/tftp/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: tftpbench serve|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want serve or load)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tftpbench:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6969", "UDP listen address")
	root := fs.String("root", ".", "directory to serve")
	maxBlk := fs.Int("max-blksize", tftpd.DefaultMaxBlockSize, "blksize cap")
	maxTr := fs.Int("max-transfers", tftpd.DefaultMaxTransfers, "concurrent transfer limit")
	antic := fs.Uint("anticipate", 0, "send this many blocks before waiting for ACKs (experimental, 0 = lock-step)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := os.OpenRoot(*root)
	if err != nil {
		return err
	}
	defer r.Close()
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer log.Sync()
	reg := prometheus.NewRegistry()
	srv, err := tftpd.New(tftpd.Config{Root: r.FS(), MaxBlockSize: *maxBlk, MaxTransfers: *maxTr, Anticipate: *antic, Registerer: reg, Logger: log.WithOptions(zap.IncreaseLevel(zap.WarnLevel))})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	err = srv.ListenAndServe(ctx, *addr)
	if mfs, gerr := reg.Gather(); gerr == nil {
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				lbl := ""
				for _, l := range m.GetLabel() {
					lbl += fmt.Sprintf("{%s=%q}", l.GetName(), l.GetValue())
				}
				switch {
				case m.Counter != nil:
					fmt.Fprintf(os.Stderr, "%s%s %g\n", mf.GetName(), lbl, m.GetCounter().GetValue())
				case m.Histogram != nil:
					fmt.Fprintf(os.Stderr, "%s_count%s %d\n", mf.GetName(), lbl, m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return err
}

type clientResult struct {
	bytes    int64
	duration time.Duration
	err      error
}

// Summary is what load prints (as JSON with -json).
type Summary struct {
	Server         string  `json:"server"`
	Client         string  `json:"client"`
	Clients        int     `json:"clients"`
	BlockSize      int     `json:"blksize"`
	WindowSize     int     `json:"windowsize"` // asked for; 0: not asked
	FileBytes      int64   `json:"file_bytes"`
	Failed         int     `json:"failed"`
	ChecksumsOK    int     `json:"sha256_ok"`
	WallSeconds    float64 `json:"wall_seconds"`
	AggregateMiBps float64 `json:"aggregate_MiB_per_s"`
	MinClientMiBps float64 `json:"min_client_MiB_per_s"`
	MedClientMiBps float64 `json:"median_client_MiB_per_s"`
	MaxClientMiBps float64 `json:"max_client_MiB_per_s"`
	FirstError     string  `json:"first_error,omitempty"`
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6969", "server address")
	name := fs.String("name", "", "label for the server in the output")
	file := fs.String("file", "", "remote file name")
	want := fs.String("sha256", "", "expected sha256 of the file (hex)")
	clients := fs.Int("clients", 64, "concurrent clients")
	blksize := fs.Int("blksize", 1468, "blksize option")
	timeout := fs.Duration("timeout", 2*time.Second, "client retransmit timeout")
	client := fs.String("client", "pin", "pin (pin/tftp, in process, lock-step) or atftp (a process per transfer)")
	window := fs.Int("windowsize", 0, "windowsize option to ask for (atftp only; 0: none)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" || *want == "" {
		return errors.New("load: -file and -sha256 are required")
	}
	wantSum, err := hex.DecodeString(*want)
	if err != nil || len(wantSum) != sha256.Size {
		return fmt.Errorf("load: -sha256 %q is not a hex sha256", *want)
	}
	if *name == "" {
		*name = *addr
	}
	fetch := func() clientResult { return fetchOne(*addr, *file, *blksize, *timeout, wantSum) }
	switch *client {
	case "pin":
		if *window != 0 {
			return errors.New("load: pin/tftp cannot ask for windowsize; use -client atftp")
		}
	case "atftp":
		dir, err := os.MkdirTemp(scratchDir(), "tftpbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		var seq atomic.Int64
		fetch = func() clientResult {
			out := filepath.Join(dir, fmt.Sprint(seq.Add(1)))
			defer os.Remove(out)
			return fetchAtftp(*addr, *file, out, *blksize, *window, wantSum)
		}
	default:
		return fmt.Errorf("load: -client %q (want pin or atftp)", *client)
	}
	results := make([]clientResult, *clients)
	var wg sync.WaitGroup
	startGate := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startGate
			results[i] = fetch()
		}()
	}
	start := time.Now()
	close(startGate)
	wg.Wait()
	wall := time.Since(start)

	s := Summary{Server: *name, Client: *client, Clients: *clients, BlockSize: *blksize, WindowSize: *window, WallSeconds: wall.Seconds()}
	var total int64
	var rates []float64
	for _, r := range results {
		if r.err != nil {
			s.Failed++
			if s.FirstError == "" {
				s.FirstError = r.err.Error()
			}
			continue
		}
		s.ChecksumsOK++
		s.FileBytes = r.bytes
		total += r.bytes
		rates = append(rates, float64(r.bytes)/(1<<20)/r.duration.Seconds())
	}
	s.AggregateMiBps = float64(total) / (1 << 20) / wall.Seconds()
	if len(rates) > 0 {
		sort.Float64s(rates)
		s.MinClientMiBps, s.MedClientMiBps, s.MaxClientMiBps = rates[0], rates[len(rates)/2], rates[len(rates)-1]
	}
	if *asJSON {
		b, _ := json.Marshal(s)
		fmt.Println(string(b))
	} else {
		fmt.Printf("%-10s %s window=%d clients=%-3d blksize=%d  aggregate %7.1f MiB/s  per client min/median/max %.1f/%.1f/%.1f MiB/s  wall %.2fs  sha256 ok %d  failed %d\n",
			s.Server, s.Client, s.WindowSize, s.Clients, s.BlockSize, s.AggregateMiBps, s.MinClientMiBps, s.MedClientMiBps, s.MaxClientMiBps, s.WallSeconds, s.ChecksumsOK, s.Failed)
		if s.FirstError != "" {
			fmt.Printf("  first error: %s\n", s.FirstError)
		}
	}
	if s.Failed > 0 {
		return fmt.Errorf("%d of %d transfers failed", s.Failed, s.Clients)
	}
	return nil
}

func fetchOne(addr, file string, blksize int, timeout time.Duration, want []byte) clientResult {
	start := time.Now()
	c, err := tftp.NewClient(addr)
	if err != nil {
		return clientResult{err: err}
	}
	c.SetTimeout(timeout)
	c.SetRetries(5)
	c.SetBlockSize(blksize)
	c.RequestTSize(true)
	wt, err := c.Receive(file, "octet")
	if err != nil {
		return clientResult{err: fmt.Errorf("RRQ %s: %w", file, err)}
	}
	h := sha256.New()
	n, err := wt.WriteTo(hashWriter{h})
	if err != nil {
		return clientResult{err: fmt.Errorf("receiving %s after %d bytes: %w", file, n, err)}
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return clientResult{err: fmt.Errorf("%s: sha256 %x, want %x", file, got, want)}
	}
	return clientResult{bytes: n, duration: time.Since(start)}
}

// fetchAtftp runs atftp for one transfer and times the process, then checks
// the file it wrote.
func fetchAtftp(addr, file, out string, blksize, window int, want []byte) clientResult {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return clientResult{err: err}
	}
	args := []string{"--option", fmt.Sprintf("blksize %d", blksize), "--option", "tsize"}
	if window > 0 {
		args = append(args, "--option", fmt.Sprintf("windowsize %d", window))
	}
	args = append(args, "--get", "--remote-file", file, "--local-file", out, host, port)
	start := time.Now()
	msg, err := exec.Command("atftp", args...).CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return clientResult{err: fmt.Errorf("atftp: %v: %s", err, bytes.TrimSpace(msg))}
	}
	f, err := os.Open(out)
	if err != nil {
		return clientResult{err: err}
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return clientResult{err: err}
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return clientResult{err: fmt.Errorf("%s: sha256 %x after %d bytes, want %x", file, got, n, want)}
	}
	return clientResult{bytes: n, duration: d}
}

// scratchDir is where atftp writes: memory when /dev/shm exists, so the
// disk is not measured.
func scratchDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

type hashWriter struct{ h hash.Hash }

func (w hashWriter) Write(p []byte) (int, error) { return w.h.Write(p) }

var _ io.Writer = hashWriter{}
