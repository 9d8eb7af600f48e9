package report

import (
	"github.com/bootfabric/bootfabric/fabricsim"
	"strconv"
	"strings"
)

// p2pText says what the peer delivery table is of.
const p2pText = "Each batch booted with the root image by peers beside the boot by servers, in the bandwidth model: " +
	"the kernel from the servers at the batch's bandwidth, then the root image, which the servers put into each board " +
	"or once into each server's nodes (servers send) and the nodes relay to each other, their own board first; " +
	"root bound names the links that bound that stage."

// p2pHead and p2pRows are the peer delivery table: one row per batch and algorithm of the
// baseline; nil without peer delivery.
func (rep *Report) p2pHead() []string {
	return []string{"batch", "nodes", "algo", "server s", "p2p s", "kernel s", "root s", "root bound", "servers send", "x server"}
}

func (rep *Report) p2pRows() [][]string {
	if rep.Delivery != "p2p" {
		return nil
	}
	var rows [][]string
	for _, r := range rep.Baseline.Rows {
		p := r.P2P
		if p == nil {
			continue // an empty batch
		}
		rows = append(rows, []string{r.Batch, strconv.Itoa(r.Nodes), r.Algo, fmtFixed(r.BootSeconds, 2), fmtFixed(p.BootSeconds, 2),
			fmtFixed(p.ServerSeconds, 2), fmtFixed(p.Root.Seconds, 2), strings.Join(p.Root.Bottlenecks, ", "),
			p.Root.Seeding(), fmtFixed(p.SpeedupVsServer, 2)})
	}
	return rows
}

// mdP2P is the peer delivery section, when the report has one.
func (rep *Report) mdP2P(md *markdown) {
	rows := rep.p2pRows()
	if rows == nil {
		return
	}
	md.p("\n## Peer delivery\n\n%s\n\n", p2pText)
	md.table(rep.p2pHead(), rows)
}

// p2pTable is the peer delivery section's table, nil without one.
func (rep *Report) p2pTable() *htmlTable {
	rows := rep.p2pRows()
	if rows == nil {
		return nil
	}
	head := rep.p2pHead()
	t := &htmlTable{Head: [][]th{headRow([]th{lth(head[0])}, head[1:]...)}}
	for _, r := range rows {
		row := []td{left(r[0])}
		for i, c := range r[1:] {
			if i == 1 || i == 6 { // algo, root bound
				row = append(row, left(c))
			} else {
				row = append(row, num(c))
			}
		}
		t.Body = append(t.Body, row)
	}
	return t
}

// p2pCSV are a CSV record's peer delivery fields, empty for an empty batch.
func p2pCSV(p *fabricsim.P2PPlan) []string {
	if p == nil {
		return []string{"", "", ""}
	}
	return []string{fmtFixed(p.BootSeconds, 4), strings.Join(p.Root.Bottlenecks, " "), p.Root.Seeding()}
}
