// Package images keeps boot profiles (kernel, initrd, kernel command line,
// extra boot files) in a content-addressed store, renders per-node iPXE
// scripts from them, locates iPXE binaries, and builds the small test
// initramfs used by test clusters.
//
// Store layout, under one directory:
//
//	manifest.json            profiles and, per file, its sha256 and size
//	blobs/sha256/<hex>       file contents, named by their sha256
//
// The manifest is replaced atomically (write to a temporary file, rename),
// and blobs are immutable, so a reader never sees a half-written profile.
// Writers (Add, Delete, ImportProfiles, GC) take an flock on .lock and read
// the manifest again under it, so processes writing at once lose nothing; a
// reader that Follows the store re-reads the manifest when it changes.
package images
