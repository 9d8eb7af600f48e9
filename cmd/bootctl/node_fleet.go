package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
	"github.com/urfave/cli/v2"
)

// nodeFleetFlags are the flags that make a node command act on a fleet's inventory, in etcd.
func nodeFleetFlags() []cli.Flag {
	return append([]cli.Flag{fleetEtcdFlag(), fleetNameFlag()}, etcdSecurityFlags()...)
}

// signFlags are --sign-key and publishFlags of the node commands that write a fleet's inventory.
func signFlags() []cli.Flag {
	return append([]cli.Flag{&cli.StringFlag{Name: "sign-key", EnvVars: []string{"BOOTCTL_SIGN_KEY"},
		Usage: "with --etcd: the operator's private key that signs the new revision (bootctl fleet keygen)"}}, publishFlags()...)
}

// fleetSource is the fleet whose current configuration holds the inventory a node command acts
// on (--etcd), as it was read.
type fleetSource struct {
	cl  *fleet.Client
	eps []string
	cur *fleet.ConfigRevision
	doc *bootconfig.FleetDoc

	// For an edit (checkBase): the key that signs it, the keys the servers trust, and what the
	// live servers run.
	key     ed25519.PrivateKey
	trusted []ed25519.PublicKey
	live    []bootsrv.MemberRevisions
}

// checkBase makes sure the revision read may be edited: the servers would take it (signed by a
// trusted key, not rolled back); else the edit would sign whatever someone wrote into etcd.
func (f *fleetSource) checkBase(c *cli.Context) error {
	key, err := signingKey(c)
	if err != nil {
		return err
	}
	if f.trusted, err = operatorTrust(c, key); err != nil {
		return err
	}
	f.key = key
	if f.live, err = bootsrv.LiveRevisions(c.Context, f.cl); err != nil {
		return &fleet.EtcdError{Endpoints: f.eps, Err: err}
	}
	if err := bootsrv.BaseProblem(f.cl, f.cur, f.trusted, f.live); err != nil {
		return badInput("%w; nothing is written: %s", err, bootsrv.RecoverHint)
	}
	return nil
}

// loadFleetNodeInventory reads the inventory of the fleet's current revision, with each node's
// owner among the live servers.
func loadFleetNodeInventory(c *cli.Context) (*nodeInventory, error) {
	if c.String("config") != "" || c.String("inventory") != "" {
		return nil, badInput("--etcd: the fleet's configuration holds the inventory; drop --config and --inventory")
	}
	cl, eps, err := openFleet(c)
	if err != nil {
		return nil, err
	}
	ni, err := readFleetNodes(c, cl, eps)
	if err != nil {
		cl.Close()
		return nil, err
	}
	return ni, nil
}

func readFleetNodes(c *cli.Context, cl *fleet.Client, eps []string) (*nodeInventory, error) {
	cur, doc, m, err := bootsrv.ReadFleetRevision(c.Context, cl)
	if errors.Is(err, fleet.ErrNoConfig) {
		return nil, badInput("--etcd: fleet %s has no configuration yet: run bootctl fleet apply first", cl.Fleet())
	}
	if err != nil {
		return nil, err
	}
	members, _, err := cl.Members(c.Context)
	if err != nil {
		return nil, &fleet.EtcdError{Endpoints: eps, Err: err}
	}
	live := make([]string, len(members))
	for i, mb := range members {
		live[i] = mb.Name
	}
	owners, err := doc.Owners(m, live)
	if err != nil {
		return nil, err
	}
	return &nodeInventory{inv: m.Inventory, h: m.Hierarchy, owner: owners,
		fleet: &fleetSource{cl: cl, eps: eps, cur: cur, doc: doc}}, nil
}

// editOf opens the fleet's inventory text for editing; a YAML inventory is refused, as a file's is.
func (f *fleetSource) editOf() (*bootconfig.InventoryEdit, error) {
	name := f.doc.Inventory.Name
	if !strings.EqualFold(filepath.Ext(name), ".csv") {
		return nil, badInput("fleet %s: its inventory %s is YAML: bootctl edits CSV inventories only; edit the file and run fleet apply", f.cl.Fleet(), name)
	}
	ed, err := bootconfig.ParseInventoryEdit([]byte(f.doc.Inventory.Text), name)
	return ed, asBadInput(err)
}

// apply stores the edited inventory as the fleet's new revision, signed with --sign-key, after
// checking it as fleet apply checks a fleet file (checkBase came first). A revision applied by
// someone else since this one was read is not overwritten: its change would be lost.
func (f *fleetSource) apply(c *cli.Context, data []byte, res *nodeEditResult) error {
	nd, _, err := f.doc.WithInventory(string(data))
	if err != nil {
		return badInput("the fleet's inventory would be refused, nothing is written: %w", err)
	}
	enc, err := nd.Encode()
	if err != nil {
		return err
	}
	rev, _, err := f.cl.PublishConfig(c.Context, enc, f.key, fleet.PublishOptions{Trusted: f.trusted, Base: f.cur.Revision, After: bootsrv.AfterSerial(f.live)})
	if errors.Is(err, fleet.ErrConflict) {
		return fmt.Errorf("fleet %s: %w while this one was edited: run the command again", f.cl.Fleet(), err)
	}
	if err != nil {
		return &fleet.EtcdError{Endpoints: f.eps, Err: err}
	}
	res.Revision, res.Number = rev.Revision, rev.Number
	if res.Applied, err = bootsrv.ConfirmRevision(c.Context, f.cl, rev, c.Duration("wait")); err != nil {
		return &fleet.EtcdError{Endpoints: f.eps, Err: err}
	}
	return nil
}

// fillStatus sets the node's state from its record in etcd, which the server holding it writes.
func (f *fleetSource) fillStatus(c *cli.Context, v *nodeView) error {
	all, err := etcdstore.LoadAll(c.Context, f.cl)
	if err != nil {
		return &fleet.EtcdError{Endpoints: f.eps, Err: err}
	}
	for i := range all {
		if all[i].Name == v.Name {
			v.Status = &all[i]
			return nil
		}
	}
	v.StatusError = "no record in etcd yet: no server has seen it"
	return nil
}
