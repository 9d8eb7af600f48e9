package delivery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	g "github.com/anacrolix/generics"
	"github.com/anacrolix/torrent"
	"github.com/anacrolix/torrent/metainfo"
	"github.com/anacrolix/torrent/storage"
)

// seed keeps serving the complete torrent for o.SeedFor, or until ctx ends. With CorruptUploads
// (whose download announced nothing) a second client serves a copy with every byte inverted,
// claimed complete without a check, as a hostile peer would.
func seed(ctx context.Context, o Options, t *torrent.Torrent, stage, announce string) error {
	if o.SeedFor <= 0 || o.ServerOnly {
		return nil
	}
	if o.CorruptUploads {
		cl, err := hostileClient(o, t, stage, announce)
		if err != nil {
			return err
		}
		defer cl.Close()
	}
	timer := time.NewTimer(o.SeedFor)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil
}

// hostileClient starts a client that serves t's torrent over inverted bytes, every piece marked
// complete so that it serves them unhashed.
func hostileClient(o Options, t *torrent.Torrent, stage, announce string) (*torrent.Client, error) {
	info := t.Info()
	dir := filepath.Join(stage, "hostile")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("hostile seed: %w", err)
	}
	data, err := os.ReadFile(o.Out) // verified already
	if err != nil {
		return nil, fmt.Errorf("hostile seed: %w", err)
	}
	for i := range data {
		data[i] ^= 0xff
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), data, 0o600); err != nil {
		return nil, fmt.Errorf("hostile seed: %w", err)
	}
	ih := t.InfoHash()
	pc := storage.NewMapPieceCompletion()
	for i := range info.NumPieces() {
		if err := pc.Set(metainfo.PieceKey{InfoHash: ih, Index: i}, true); err != nil {
			return nil, fmt.Errorf("hostile seed: %w", err)
		}
	}
	st := storage.NewFileOpts(storage.NewFileClientOpts{
		ClientBaseDir:   dir,
		TorrentDirMaker: func(string, *metainfo.Info, metainfo.Hash) string { return dir },
		FilePathMaker:   func(storage.FilePathMakerOpts) string { return "data" },
		PieceCompletion: pc, UsePartFiles: g.Some(false),
	})
	o.Port = 0
	cl, err := torrent.NewClient(clientConfig(o, dir))
	if err != nil {
		return nil, fmt.Errorf("hostile seed: %w", err)
	}
	bad, _ := cl.AddTorrentOpt(torrent.AddTorrentOpts{InfoHash: ih, InfoBytes: t.Metainfo().InfoBytes, Storage: st, DisableInitialPieceCheck: true})
	bad.AddTrackers([][]string{{announce}})
	return cl, nil
}
