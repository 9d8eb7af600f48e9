package bootsrv

import (
	"net"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// limitListener caps the open connections of each client address: one host holding hundreds of
// idle keep-alive connections would otherwise use up the process's descriptors and take TFTP and
// DHCP down with HTTP. A connection over the cap is closed at once, before any byte is read.
type limitListener struct {
	net.Listener
	max     int
	refused prometheus.Counter

	mu   sync.Mutex
	open map[netip.Addr]int
}

func newLimitListener(ln net.Listener, max int, refused prometheus.Counter) *limitListener {
	return &limitListener{Listener: ln, max: max, refused: refused, open: map[netip.Addr]int{}}
}

// Accept returns the next connection within its client's cap, closing those over it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		a := connAddr(c)
		l.mu.Lock()
		if l.open[a] >= l.max {
			l.mu.Unlock()
			c.Close()
			if l.refused != nil {
				l.refused.Inc()
			}
			continue
		}
		l.open[a]++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l, addr: a}, nil
	}
}

func (l *limitListener) release(a netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[a]--; l.open[a] <= 0 {
		delete(l.open, a)
	}
}

func connAddr(c net.Conn) netip.Addr {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort().Addr().Unmap()
	}
	ap, _ := netip.ParseAddrPort(c.RemoteAddr().String())
	return ap.Addr().Unmap()
}

// limitConn gives its slot back once, when closed.
type limitConn struct {
	net.Conn
	l    *limitListener
	addr netip.Addr
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.addr) })
	return err
}
