package tftpd

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// TFTP opcodes (RFC 1350, RFC 2347).
const (
	opRRQ   = 1
	opWRQ   = 2
	opDATA  = 3
	opACK   = 4
	opERROR = 5
	opOACK  = 6
)

// TFTP error codes (RFC 1350) the windowed sender sends.
const (
	errCodeUndefined = 0
	errCodeNotFound  = 1
	errCodeAccess    = 2
	errCodeIllegal   = 4 // illegal TFTP operation
	errCodeOption    = 8 // RFC 2347: option negotiation refused
)

// Limits of the options and requests the windowed sender accepts.
const (
	defaultBlockSize   = 512
	minBlockSize       = 8       // RFC 2348
	maxWindowSize      = 64      // where tftp-hpa and u-root cap; RFC 7440 finds no gain beyond
	maxWindowBytes     = 1 << 20 // windowsize x blksize is held in memory per transfer
	maxTimeoutSeconds  = 255     // RFC 2349
	maxRequestDatagram = 1024    // an RRQ with every option fits in 600 bytes
	maxRequestOptions  = 16
)

// errOption is wrapped by parseRRQ's refusals that are about options.
var errOption = errors.New("option")

// parseErrorCode is the TFTP error code for a request parseRRQ refused.
func parseErrorCode(err error) uint16 {
	if errors.Is(err, errOption) {
		return errCodeOption
	}
	return errCodeIllegal
}

// request is a parsed read request.
type request struct {
	filename string
	mode     string            // lower case: "octet" or "netascii"
	opts     map[string]string // option names in lower case, values as sent
}

// parseRRQ parses a datagram that should be a read request. It is strict
// where a sloppy parse could be exploited (every string NUL-terminated, no
// duplicate options) and otherwise lenient: unknown options are kept, to be
// left out of the OACK.
func parseRRQ(b []byte) (request, error) { return parseRequest(b, opRRQ) }

// parseRequest parses a read (opRRQ) or write (opWRQ) request as parseRRQ
// does; a write request is parsed only to be named in the log line of its
// refusal.
func parseRequest(b []byte, want int) (request, error) {
	if len(b) < 2 {
		return request{}, errors.New("datagram shorter than an opcode")
	}
	if op := int(b[0])<<8 | int(b[1]); op != want {
		name := "RRQ"
		if want == opWRQ {
			name = "WRQ"
		}
		return request{}, fmt.Errorf("opcode %d is not %s", op, name)
	}
	if len(b) > maxRequestDatagram {
		return request{}, fmt.Errorf("request of %d bytes, limit %d", len(b), maxRequestDatagram)
	}
	rest := b[2:]
	if len(rest) == 0 || rest[len(rest)-1] != 0 {
		return request{}, errors.New("request does not end in NUL")
	}
	fields := strings.Split(string(rest[:len(rest)-1]), "\x00")
	if len(fields) < 2 {
		return request{}, errors.New("request has no mode")
	}
	r := request{filename: fields[0], mode: strings.ToLower(fields[1]), opts: map[string]string{}}
	if r.mode != "octet" && r.mode != "netascii" {
		return request{}, fmt.Errorf("mode %q (want octet or netascii)", fields[1])
	}
	fields = fields[2:]
	if len(fields)%2 != 0 {
		return request{}, fmt.Errorf("%w %q has no value", errOption, fields[len(fields)-1])
	}
	if len(fields)/2 > maxRequestOptions {
		return request{}, fmt.Errorf("%d %ss, limit %d", len(fields)/2, errOption, maxRequestOptions)
	}
	for i := 0; i < len(fields); i += 2 {
		name := strings.ToLower(fields[i])
		if _, dup := r.opts[name]; dup {
			return request{}, fmt.Errorf("%w %q given twice", errOption, name)
		}
		r.opts[name] = fields[i+1]
	}
	return r, nil
}

// optionString lists the request's options as "name=value" in name order,
// for the log.
func (r request) optionString() string {
	names := make([]string, 0, len(r.opts))
	for n := range r.opts {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(n + "=" + r.opts[n])
	}
	return b.String()
}

// windowSize is the windowsize the request asks for, 0 when it asks for
// none or for something RFC 7440 does not allow (1..65535).
func (r request) windowSize() int {
	v, ok := r.opts["windowsize"]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 65535 {
		return 0
	}
	return n
}

// params are a transfer's negotiated parameters and the OACK that grants
// them (nil when the request had no option we accept).
type params struct {
	blockSize  int
	windowSize int
	timeout    time.Duration // 0: the server's
	oack       []byte
}

// negotiate decides the transfer parameters for r and a file of size bytes
// (-1: do not answer tsize), with the block size capped at blockCap and the
// client's timeout at maxTimeout. Options that are malformed, out of their
// RFC's range or above the server's ceiling are left out of the OACK, as
// RFC 2347 allows, and take their defaults: RFC 2349 lets the server grant
// the timeout asked for or none, not a smaller one.
func negotiate(r request, size int64, blockCap int, maxTimeout time.Duration) params {
	p := params{blockSize: defaultBlockSize, windowSize: 1}
	var oack []string
	if n, ok := r.blockSize(); ok {
		p.blockSize = min(n, blockCap)
		oack = append(oack, "blksize", strconv.Itoa(p.blockSize))
	}
	if n := r.windowSize(); n > 0 {
		p.windowSize = max(1, min(n, maxWindowSize, maxWindowBytes/p.blockSize))
		oack = append(oack, "windowsize", strconv.Itoa(p.windowSize))
	}
	if r.opts["tsize"] == "0" && size >= 0 {
		oack = append(oack, "tsize", strconv.FormatInt(size, 10))
	}
	if n, ok := r.timeoutSeconds(maxTimeout); ok {
		p.timeout = time.Duration(n) * time.Second
		oack = append(oack, "timeout", strconv.Itoa(n))
	}
	p.oack = oackPacket(oack)
	return p
}

// blockSize is the blksize the request asks for, when it is a number in
// RFC 2348's range (8..65464).
func (r request) blockSize() (int, bool) {
	v, ok := r.opts["blksize"]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= minBlockSize && n <= maxBlockCap
}

// timeoutSeconds is the timeout the request asks for, when it is a number
// of seconds in RFC 2349's range (1..255) and at most ceiling.
func (r request) timeoutSeconds(ceiling time.Duration) (int, bool) {
	v, ok := r.opts["timeout"]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= maxTimeoutSeconds && time.Duration(n)*time.Second <= ceiling
}

// oackPacket is the OACK datagram granting the option names and values in
// oack, nil when there are none.
func oackPacket(oack []string) []byte {
	if len(oack) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.Write([]byte{0, opOACK})
	for _, s := range oack {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.Bytes()
}

// errorPacket builds a TFTP ERROR datagram.
func errorPacket(code uint16, msg string) []byte {
	if len(msg) > 200 {
		msg = msg[:200]
	}
	b := []byte{0, opERROR, byte(code >> 8), byte(code)}
	return append(append(b, msg...), 0)
}
