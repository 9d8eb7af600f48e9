package power

import (
	"cmp"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/bootfabric/bootfabric/internal/texttable"
	"gopkg.in/yaml.v3"
)

// BMC is a node's BMC as an inventory names it: its driver (ipmi, redfish or exec) and address.
type BMC struct {
	Node, Driver, Address string
}

// ControllerOptions is what the controllers of one command share: the exec driver's templates,
// the CAs a Redfish BMC's certificate must be signed by (nil: the system's) or the admin's word
// that any will do, the UEFI HTTP boot URI, and the time one action may take.
type ControllerOptions struct {
	Exec            *ExecTemplates
	RedfishRoots    *x509.CertPool
	RedfishInsecure bool
	HTTPBootURI     string
	Timeout         time.Duration
}

// NewController makes a node's controller by its BMC's driver, logged in as login.
func NewController(b BMC, login Credential, o ControllerOptions) (Controller, error) {
	switch b.Driver {
	case "redfish":
		// A BMC that serves several systems (a chassis manager) is asked for the node's.
		return NewRedfish(RedfishConfig{Endpoint: b.Address, Username: login.User, Password: login.Password,
			System: b.Node, RootCAs: o.RedfishRoots, InsecureSkipVerify: o.RedfishInsecure, HTTPBootURI: o.HTTPBootURI})
	case "exec":
		if o.Exec == nil {
			return nil, fmt.Errorf("driver exec: no command templates")
		}
		return NewExec(*o.Exec, ExecVars{Node: b.Node, BMC: b.Address, User: login.User}, login.Password)
	case "ipmi":
		host, port := b.Address, 0
		if h, p, err := net.SplitHostPort(b.Address); err == nil {
			host = h
			port, _ = strconv.Atoi(p)
		}
		return NewIPMI(IPMIConfig{Host: host, Port: port, Username: login.User, Password: login.Password, Timeout: min(o.Timeout, 5*time.Second)})
	}
	return nil, fmt.Errorf("driver %q", b.Driver)
}

// LoadExecTemplates reads the exec driver's command templates (YAML: on, off, cycle, status, pxe).
func LoadExecTemplates(path string) (*ExecTemplates, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t ExecTemplates
	if err := yaml.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &t, nil
}

// Report is what an action on a set of nodes came to: each node's result and how many failed.
type Report struct {
	Op     Op       `json:"op"`
	Nodes  int      `json:"nodes"`
	Failed int      `json:"failed"`
	Result []Result `json:"results"`
}

// NewReport sums up the results of op.
func NewReport(op Op, res []Result) Report {
	r := Report{Op: op, Nodes: len(res), Result: res}
	for _, x := range res {
		if x.Class != "" {
			r.Failed++
		}
	}
	return r
}

// Done lists the nodes whose action succeeded, in order: a node that failed may not have done it
// (one that failed to power off may still run).
func (r Report) Done() []string {
	var done []string
	for _, x := range r.Result {
		if x.Class == "" {
			done = append(done, x.Node)
		}
	}
	return done
}

// TargetNodes lists the targets' nodes, in order.
func TargetNodes(targets []Target) []string {
	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = t.Node
	}
	return names
}

// WriteTable writes a row per node with its BMC, state and result, then how many were done.
func (r *Report) WriteTable(w io.Writer) error {
	t := texttable.New(w)
	t.Row("NODE", "BMC", "ACTION", "STATE", "RESULT")
	for _, x := range r.Result {
		result := "ok"
		if x.Class != "" {
			result = string(x.Class) + ": " + x.Error
		}
		t.Row(x.Node, x.BMC, string(x.Op), cmp.Or(string(x.State), "-"), result)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d of %d nodes done\n", r.Nodes-r.Failed, r.Nodes)
	return err
}
