// Package testfix holds the test fixtures that tests of several packages share: a boot server's
// files (an image store with profile "default", fake iPXE binaries, a loopback configuration),
// running a server for the length of a test, free loopback ports, and polling a condition on a
// deadline instead of sleeping. Its files are ordinary Go files, not _test.go, because tests of
// other packages import them; nothing in it is used outside tests.
//
// It has no package-level mutable state, and it imports no package of this module that imports
// it back from its tests (bootsrv's tests use it, so it never imports bootsrv): a server is run
// through the Server interface.
package testfix
