package progress

import (
	"io"
	"sync"
)

// Line is a terminal line shared by progress bars and other writers, such as a logger writing to
// the same stderr. A write through the Line first erases a bar drawn on it, so that a log line
// never runs into the bar's text; the bar comes back below it at its next redraw. When nothing
// is drawn a write passes through unchanged, so output that never meets a bar is byte-identical.
type Line struct {
	mu    sync.Mutex
	w     io.Writer
	drawn bool // a bar's text is on the line
}

// NewLine returns a Line writing to w.
func NewLine(w io.Writer) *Line { return &Line{w: w} }

// Write erases a drawn bar, then writes p.
func (l *Line) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eraseLocked()
	return l.w.Write(p)
}

// draw replaces the line's content with s.
func (l *Line) draw(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, "\r"+s+"\033[K")
	l.drawn = true
}

// erase clears the line if a bar is drawn on it.
func (l *Line) erase() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eraseLocked()
}

func (l *Line) eraseLocked() {
	if l.drawn {
		io.WriteString(l.w, "\r\033[K")
		l.drawn = false
	}
}
