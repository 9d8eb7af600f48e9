// Package ociimport turns a container image into a boot profile: the image's layers, applied in
// order with their whiteouts, become one compressed newc cpio initramfs (the node's whole root
// file system, booted from RAM), and its kernel comes from the image's /boot or from a file.
//
// The image is read with go-containerregistry from an OCI image layout directory, an OCI
// archive (a tar of such a layout) or a `docker save` tarball; no registry is involved. A root
// file system tarball (plain, gzip, zstd or xz; mmdebstrap's output) is read as the one layer.
// Modules the agent loads may be named: they are resolved with modules.dep (modules.go).
//
// Import reads every layer twice, streaming: a first pass reads only the tar headers and builds
// the final tree (which entry of which layer survives the whiteouts, which paths share an inode);
// the second pass copies each surviving file's data straight from its layer into the archive.
// Memory grows with the number of files, never with their size. Directories are written first,
// parents before children, because the kernel's initramfs unpacker does not create missing
// parents.
//
// The result is written to files staged in the store and moved into place only when everything
// succeeded: a failed import leaves nothing in the store.
package ociimport
