// Package boltstore keeps a boot server's node states in a bbolt file in its state directory (the
// default store of nodestate.Tracker, one server). A damaged file is detected before bbolt maps
// it (pagecheck.go) and is a DamagedError; Recover keeps it aside and salvages its records.
package boltstore
