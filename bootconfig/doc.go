// Package bootconfig is what a boot server is told, apart from the server that runs it: one
// server's configuration file (Config, checked field by field with the file's line), the inventory
// (MAC -> node, CSV or YAML, and InventoryEdit, which changes a CSV inventory without touching the
// rows it does not edit), the ownership rule that says which server answers which node
// (AssignServers, Authority) and a fleet's configuration document (FleetDoc: what the operator
// signs and publishes in etcd, and what each server materializes from it).
//
// Nothing here opens a socket or a state file: bootctl checks and edits configurations with it,
// fleet apply publishes them, and package bootsrv serves them.
package bootconfig
