// Command pintftp serves a directory read-only with github.com/pin/tftp/v3's own server, as the
// third server of bench/tftp/run.sh beside `bootctl serve` and tftpd-hpa: the same files, the same
// clients, so that our senders are measured against the library's in the same run.
//
// It exposes what pin/tftp v3.2.0's Server offers: the block size cap (SetBlockSize; its MTU
// clamp is off, as the other servers have none), the per-try timeout and retries, single-port
// mode (EnableSinglePort: every transfer on the request port) and anticipate mode (SetAnticipate:
// N blocks sent before waiting for their ACKs; not RFC 7440, and no windowsize option is
// negotiated). Files are opened through an os.Root, so that no name leads out of the directory.
//
//	pintftp -listen 127.0.0.1:16971 -root DIR [-blksize 1468] [-timeout 3s] [-retries 5] [-single-port] [-anticipate N]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/pin/tftp/v3"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:16971", "UDP address to serve on")
	root := flag.String("root", "", "directory to serve (required)")
	blksize := flag.Int("blksize", 1468, "block size cap (pin/tftp takes 513..65464)")
	timeout := flag.Duration("timeout", 3*time.Second, "wait for each ACK before sending again")
	retries := flag.Int("retries", 5, "sends of a block before giving up")
	singlePort := flag.Bool("single-port", false, "serve every transfer on the request port (EnableSinglePort)")
	anticipate := flag.Uint("anticipate", 0, "blocks sent before waiting for their ACKs (SetAnticipate; 0 or 1: lock-step)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *root, *blksize, *timeout, *retries, *singlePort, *anticipate); err != nil {
		fmt.Fprintln(os.Stderr, "pintftp:", err)
		os.Exit(1)
	}
}

// run serves dir on listen until ctx ends.
func run(ctx context.Context, listen, dir string, blksize int, timeout time.Duration, retries int, singlePort bool, anticipate uint) error {
	if dir == "" {
		return errors.New("-root is required")
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening the root: %w", err)
	}
	defer r.Close()
	s := tftp.NewServer(readHandler(r), nil)
	s.SetBlockSize(blksize)
	// Off: the clamp to the request interface's MTU would give loopback 65508-byte blocks where
	// the other servers cap at blksize; SetBlockSize's cap still applies.
	s.SetBlockSizeNegotiation(false)
	s.SetTimeout(timeout)
	s.SetRetries(retries)
	if singlePort {
		s.EnableSinglePort()
	}
	s.SetAnticipate(anticipate)

	ua, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return fmt.Errorf("resolving %q: %w", listen, err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("listening on %q: %w", listen, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Serve(conn) }()
	select {
	case <-ctx.Done():
		// Shutdown waits for running transfers; the bench stops the server between runs only.
		s.Shutdown()
		return <-errc
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("serving on %s: %w", listen, err)
		}
		return nil
	}
}

// readHandler serves files from r. A name is taken as tftpd-hpa -s takes it: relative to the
// root, leading slashes dropped.
func readHandler(r *os.Root) func(string, io.ReaderFrom) error {
	return func(name string, rf io.ReaderFrom) error {
		name = path.Clean("/" + strings.ReplaceAll(name, "\\", "/"))[1:]
		f, err := r.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: not a regular file", name)
		}
		// tsize: without SetSize pin/tftp would find it by seeking the file.
		if ot, ok := rf.(tftp.OutgoingTransfer); ok {
			ot.SetSize(fi.Size())
		}
		// Read ahead as tftpd serves its files (readAhead in tftpd/transfer.go), so that the
		// senders are compared, not one pread(2) per block against one per 256 KiB.
		_, err = rf.ReadFrom(bufio.NewReaderSize(f, 256<<10))
		return err
	}
}
