package dhcpd

import (
	"fmt"
	"net"
)

// Reservation is what this server hands to one client it owns.
type Reservation struct {
	// Name is the host name (option 12). Empty: no option 12.
	Name string
	// IP is the client's address (yiaddr). Nil in proxy mode.
	IP net.IP
	// Mask is the subnet mask (option 1). Nil: no option 1.
	Mask net.IPMask
	// Router is the default gateway (option 3). Nil: no option 3.
	Router net.IP
	// DNS are the name servers (option 6). Empty: no option 6.
	DNS []net.IP
	// Domain is the domain name (option 15). Empty: no option 15.
	Domain string
}

// Reservations tells whether this server owns a client and what it gets.
// Lookup must be safe for concurrent use and fast: it is called for every
// packet. A MAC it does not return is left to another boot server.
type Reservations interface {
	Lookup(mac net.HardwareAddr) (Reservation, bool)
}

// StaticReservations is an immutable Reservations keyed by the MAC address's raw bytes (as
// NewStaticReservations builds it), so that a lookup converts nothing and allocates nothing.
type StaticReservations map[string]Reservation

// NewStaticReservations builds a StaticReservations from mac -> reservation.
func NewStaticReservations(m map[string]Reservation) (StaticReservations, error) {
	s := make(StaticReservations, len(m))
	for k, r := range m {
		mac, err := net.ParseMAC(k)
		if err != nil {
			return nil, fmt.Errorf("dhcpd: reservation for %q (%s): %w", k, r.Name, err)
		}
		s[macKey(mac)] = r
	}
	return s, nil
}

// Lookup implements Reservations.
func (s StaticReservations) Lookup(mac net.HardwareAddr) (Reservation, bool) {
	r, ok := s[string(mac)]
	return r, ok
}

// ReservationsFunc adapts a function to Reservations.
type ReservationsFunc func(mac net.HardwareAddr) (Reservation, bool)

// Lookup implements Reservations.
func (f ReservationsFunc) Lookup(mac net.HardwareAddr) (Reservation, bool) { return f(mac) }

func macKey(mac net.HardwareAddr) string { return string(mac) }
