package bootsrv

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/tftpd"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"go.uber.org/zap"
)

// dhcpObserver turns handled DHCP requests into boot events. It runs on the DHCP reply path
// (dhcpd calls it before it sends the reply), once per packet, so it does its work in one tracker
// call and builds no strings: the details are made once, here.
type dhcpObserver struct {
	s       *Server
	details map[dhcpDetailKey]string
}

type dhcpDetailKey struct {
	t   dhcpv4.MessageType
	out dhcpd.Outcome
}

func newDHCPObserver(s *Server) dhcpObserver {
	o := dhcpObserver{s: s, details: map[dhcpDetailKey]string{}}
	// The outcomes that come with boot events (appendDHCPEvents); others never reach the tracker.
	outcomes := []dhcpd.Outcome{dhcpd.OutcomeOffered, dhcpd.OutcomeAcked, dhcpd.OutcomeNaked, dhcpd.OutcomeIgnored,
		dhcpd.OutcomeExhausted, dhcpd.OutcomeError, dhcpd.OutcomeOtherServer}
	for t := dhcpv4.MessageTypeDiscover; t <= dhcpv4.MessageTypeInform; t++ {
		for _, out := range outcomes {
			o.details[dhcpDetailKey{t, out}] = dhcpDetail(t, out)
		}
	}
	return o
}

func dhcpDetail(t dhcpv4.MessageType, out dhcpd.Outcome) string {
	return fmt.Sprintf("dhcp %s: %s", strings.ToLower(t.String()), out)
}

// OnDHCP implements dhcpd.Observer.
func (o dhcpObserver) OnDHCP(mac net.HardwareAddr, t dhcpv4.MessageType, out dhcpd.Outcome, ip net.IP, kind dhcpd.ClientKind) {
	var buf [2]nodestate.Event
	evs := appendDHCPEvents(buf[:0], t, out)
	if len(evs) == 0 {
		return
	}
	detail, ok := o.details[dhcpDetailKey{t, out}]
	if !ok {
		detail = dhcpDetail(t, out)
	}
	var addr netip.Addr
	if a, ok := netip.AddrFromSlice(ip.To4()); ok && !a.IsUnspecified() {
		addr = a
	}
	// dhcpd reports a request before it sends the reply, so a client's DISCOVER is always
	// observed before the REQUEST that the OFFER prompted.
	o.s.tracker.ObserveDHCP(mac, evs, addr, detail, DHCPClient(kind))
}

// DHCPClient maps dhcpd's client kinds to the node state machine's.
func DHCPClient(k dhcpd.ClientKind) nodestate.Client {
	switch k {
	case dhcpd.KindPXE, dhcpd.KindHTTP:
		return nodestate.ClientFirmware
	case dhcpd.KindIPXE:
		return nodestate.ClientIPXE
	case dhcpd.KindPlain:
		return nodestate.ClientOS
	}
	return nodestate.ClientUnknown
}

// DHCPEvents maps a handled DHCP request (its message type and what the server did) to boot
// events. It is pure.
func DHCPEvents(t dhcpv4.MessageType, out dhcpd.Outcome) []nodestate.Event {
	return appendDHCPEvents(nil, t, out)
}

// appendDHCPEvents is DHCPEvents appending to evs: the reply path passes a buffer on its stack.
func appendDHCPEvents(evs []nodestate.Event, t dhcpv4.MessageType, out dhcpd.Outcome) []nodestate.Event {
	switch t {
	case dhcpv4.MessageTypeDiscover:
		switch out {
		case dhcpd.OutcomeOffered:
			return append(evs, nodestate.EvDiscover, nodestate.EvOffer)
		case dhcpd.OutcomeDuplicate, dhcpd.OutcomeNotOurs, dhcpd.OutcomeNotPXE, dhcpd.OutcomeSendFailed:
			return evs
		case dhcpd.OutcomeRefused:
			// A spoofed relay's DISCOVER, or an unknown MAC past its share: no sign that a
			// node boots (and none may move a node's state).
			return evs
		}
		return append(evs, nodestate.EvDiscover)
	case dhcpv4.MessageTypeRequest:
		if out == dhcpd.OutcomeAcked {
			return append(evs, nodestate.EvAck)
		}
	}
	return evs
}

// tftpObserver turns TFTP transfers into boot events.
type tftpObserver struct{ s *Server }

// OnTransferStart implements tftpd.Observer.
func (o tftpObserver) OnTransferStart(i tftpd.TransferInfo) { o.s.tftpStarted(i) }

// OnTransferDone implements tftpd.Observer.
func (o tftpObserver) OnTransferDone(r tftpd.TransferResult) {
	o.s.tftpEnded(r)
	name, ok := o.s.tracker.NameByIP(r.Remote.Addr())
	if !ok {
		return
	}
	ev := TFTPEvent(r.Outcome, r.Path, o.s.fileKind)
	detail := fmt.Sprintf("tftp %s: %s", r.Filename, r.Outcome)
	if r.Outcome == tftpd.OutcomeOK {
		detail += fmt.Sprintf(" (%d bytes in %.3f s, blksize %d, windowsize %d)", r.Bytes, r.Duration.Seconds(), r.BlockSize, r.WindowSize)
	}
	if r.Err != nil && r.Outcome.Failed() {
		detail += ": " + r.Err.Error()
	}
	o.s.observe(o.s.log.WithLazy(zap.Stringer("remote", r.Remote), zap.String("node", name)), name, ev, detail)
}

// fileKind says which event delivering path (in the served FS) is: the kernel or initrd of a
// profile, or another boot file.
func (s *Server) fileKind(path string) nodestate.Event {
	parts := strings.Split(path, "/")
	if len(parts) == 3 && parts[0] == "boot" {
		if p, err := s.images.Get(parts[1]); err == nil {
			switch parts[2] {
			case p.Kernel:
				return nodestate.EvKernel
			case p.Initrd:
				return nodestate.EvInitrd
			}
		}
	}
	return nodestate.EvNBP
}

// TFTPEvent maps a finished TFTP transfer to a boot event; kind classifies a delivered file. It is
// pure (given kind): the UEFI tsize probe is EvProbe, never a failure, and a request that could
// not start (missing file, refused) is EvTransferRefused, which moves nothing (issue 13: a
// spoofed request for a missing file marked a node failed).
func TFTPEvent(out tftpd.Outcome, path string, kind func(string) nodestate.Event) nodestate.Event {
	switch {
	case out == tftpd.OutcomeOK:
		return kind(path)
	case out == tftpd.OutcomeProbe:
		return nodestate.EvProbe
	case out == tftpd.OutcomeNotFound || out == tftpd.OutcomeRefused:
		return nodestate.EvTransferRefused
	}
	return nodestate.EvTransferFailed
}
