package nodestate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendStatusJSON appends n encoded exactly as encoding/json encodes it (same fields, order,
// omissions and escaping), without reflection. The state flush encodes every changed node's
// record, history included, and under a DHCP storm that encoding was the largest cost of the
// whole serve path (pprof in BenchmarkServeDORA); TestStatusJSONMatchesEncodingJSON holds the two
// encodings byte for byte equal.
func AppendStatusJSON(b []byte, n *NodeStatus) ([]byte, error) {
	b = append(b, `{"name":`...)
	b = appendJSONString(b, n.Name)
	b = append(b, `,"mac":`...)
	b = appendJSONString(b, n.MAC)
	if n.IP != "" {
		b = append(b, `,"ip":`...)
		b = appendJSONString(b, n.IP)
	}
	b = append(b, `,"position":`...)
	b = appendJSONString(b, n.Position)
	b = append(b, `,"profile":`...)
	b = appendJSONString(b, n.Profile)
	b, err := appendProgress(b, n)
	if err != nil {
		return nil, err
	}
	if n.Health != nil {
		if b, err = appendHealth(b, n.Health); err != nil {
			return nil, err
		}
	}
	if b, err = appendHistoryJSON(b, n.History); err != nil {
		return nil, err
	}
	if n.HistoryDropped != 0 {
		b = append(b, `,"history_dropped":`...)
		b = strconv.AppendInt(b, int64(n.HistoryDropped), 10)
	}
	if n.RebootRequested {
		b = append(b, `,"reboot_requested":true`...)
	}
	if n.PoweredOff {
		b = append(b, `,"powered_off":true`...)
	}
	if n.Server != "" {
		b = append(b, `,"server":`...)
		b = appendJSONString(b, n.Server)
	}
	if n.Reported {
		b = append(b, `,"reported":true`...)
	}
	if len(n.Served) > 0 {
		b = append(b, `,"served":[`...)
		for i, f := range n.Served {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, string(f))
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// appendProgress writes the fields of n's boot progress: state, since, attempt, times,
// last_event, last_seen and error.
func appendProgress(b []byte, n *NodeStatus) ([]byte, error) {
	b, err := appendStateField(b, `,"state":`, n.State)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"since":`...)
	if b, err = appendJSONTime(b, n.Since); err != nil {
		return nil, err
	}
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(n.Attempt), 10)
	if b, err = appendTimes(b, n.Times); err != nil {
		return nil, err
	}
	if n.LastEvent != 0 {
		b = append(b, `,"last_event":`...)
		b = appendJSONString(b, n.LastEvent.String())
	}
	if !n.LastSeen.IsZero() {
		b = append(b, `,"last_seen":`...)
		if b, err = appendJSONTime(b, n.LastSeen); err != nil {
			return nil, err
		}
	}
	if n.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, n.Error)
	}
	return b, nil
}

// appendHistoryJSON writes the history field, omitted when empty.
func appendHistoryJSON(b []byte, h []Transition) ([]byte, error) {
	if len(h) == 0 {
		return b, nil
	}
	b = append(b, `,"history":[`...)
	var err error
	for i := range h {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendTransition(b, &h[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendStateField(b []byte, key string, s State) ([]byte, error) {
	if s >= numStates {
		return nil, fmt.Errorf("invalid boot state %d", uint8(s))
	}
	b = append(b, key...)
	return appendJSONString(b, stateNames[s]), nil
}

// appendTimes writes the map as encoding/json does: keys (state names) in sorted order, null
// for a nil map.
func appendTimes(b []byte, times map[State]time.Time) ([]byte, error) {
	b = append(b, `,"times":`...)
	if times == nil {
		return append(b, "null"...), nil
	}
	var keys [numStates]State
	k := keys[:0]
	for s := range times {
		if s >= numStates {
			return nil, fmt.Errorf("invalid boot state %d", uint8(s))
		}
		k = append(k, s)
	}
	slices.SortFunc(k, func(x, y State) int { return cmpString(stateNames[x], stateNames[y]) })
	b = append(b, '{')
	var err error
	for i, s := range k {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, stateNames[s])
		b = append(b, ':')
		if b, err = appendJSONTime(b, times[s]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func appendHealth(b []byte, h *Health) ([]byte, error) {
	b = append(b, `,"health":{"status":`...)
	b = appendJSONString(b, h.Status)
	if len(h.Details) > 0 {
		b = append(b, `,"details":`...)
		// As encoding/json writes a json.RawMessage: compacted, HTML characters escaped.
		var c bytes.Buffer
		if err := json.Compact(&c, h.Details); err != nil {
			return nil, fmt.Errorf("health details: %w", err)
		}
		var e bytes.Buffer
		json.HTMLEscape(&e, c.Bytes())
		b = append(b, e.Bytes()...)
	}
	b = append(b, `,"at":`...)
	b, err := appendJSONTime(b, h.At)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

func appendTransition(b []byte, t *Transition) ([]byte, error) {
	b, err := appendStateField(append(b, '{'), `"from":`, t.From)
	if err != nil {
		return nil, err
	}
	if b, err = appendStateField(b, `,"to":`, t.To); err != nil {
		return nil, err
	}
	b = append(b, `,"event":`...)
	b = appendJSONString(b, t.Event.String())
	b = append(b, `,"at":`...)
	if b, err = appendJSONTime(b, t.At); err != nil {
		return nil, err
	}
	if t.Detail != "" {
		b = append(b, `,"detail":`...)
		b = appendJSONString(b, t.Detail)
	}
	return append(b, '}'), nil
}

// appendJSONTime writes t as time.Time's MarshalJSON does (RFC 3339 with nanoseconds, quoted).
func appendJSONTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("time %v: year outside [0,9999]", t)
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping on: <, > and & as \u00XX,
// invalid UTF-8 as \ufffd, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = appendEscapedASCII(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscapedASCII writes the escape of ASCII character c as encoding/json writes it.
func appendEscapedASCII(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
