package bootconfig

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/internal/atomicfile"
	"github.com/bootfabric/bootfabric/topology"
)

// InventoryEdit is a CSV inventory opened for editing (bootctl node add|set|delete). It keeps every
// record's bytes as read, with the comments and blank lines before it, so that writing it back
// changes only the rows an edit touched: comments, row order, quoting and columns bootctl does
// not know all stay as they were.
type InventoryEdit struct {
	file   string
	orig   []byte
	header editRow
	col    map[string]int // lower-case column name -> index in the header
	rows   []editRow
	tail   []byte // what follows the last record (comments, blank lines)
}

// editRow is one record: the text before it (comments, blank lines), its bytes as read (nil once
// an edit changed it: it is then written from fields) and its fields.
type editRow struct {
	lead   []byte
	raw    []byte
	fields []string
	line   int
}

// ReadInventoryEdit reads a CSV inventory file for editing.
func ReadInventoryEdit(path string) (*InventoryEdit, error) {
	if !strings.EqualFold(filepath.Ext(path), ".csv") {
		return nil, &Error{File: path, Msg: "bootctl edits CSV inventories only (the name must end in .csv); edit a YAML inventory by hand"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return ParseInventoryEdit(data, path)
}

// ParseInventoryEdit splits a CSV inventory's text into its records; file names it in errors.
func ParseInventoryEdit(data []byte, file string) (*InventoryEdit, error) {
	ed := &InventoryEdit{file: file, orig: data, col: map[string]int{}}
	lineStart := []int{0, 0} // lineStart[n] is the offset of line n (1-based)
	for i, c := range data {
		if c == '\n' {
			lineStart = append(lineStart, i+1)
		}
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = -1 // the parser checks the shape; here every byte must survive
	prev := 0
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err, file)
		}
		line, _ := r.FieldPos(0)
		start, end := lineStart[line], int(r.InputOffset())
		row := editRow{lead: data[prev:start], raw: data[start:end], fields: rec, line: line}
		prev = end
		if ed.header.fields == nil {
			ed.header = row
			continue
		}
		ed.rows = append(ed.rows, row)
	}
	ed.tail = data[prev:]
	if ed.header.fields == nil {
		return nil, &Error{File: file, Msg: "empty inventory: want a header row such as name,mac,ip"}
	}
	for i, c := range ed.header.fields {
		ed.col[strings.ToLower(strings.TrimSpace(c))] = i
	}
	if _, ok := ed.col["name"]; !ok {
		return nil, &Error{File: file, Line: ed.header.line, Field: "header", Msg: `missing column "name"`}
	}
	return ed, nil
}

// find returns the index of the row of the named node, or -1.
func (ed *InventoryEdit) find(name string) int {
	c := ed.col["name"]
	for i, r := range ed.rows {
		if c < len(r.fields) && strings.TrimSpace(r.fields[c]) == name {
			return i
		}
	}
	return -1
}

// column returns the index of a column, adding it at the end of the header (and an empty field
// to every row) when the file has none.
func (ed *InventoryEdit) column(name string) int {
	if c, ok := ed.col[name]; ok {
		return c
	}
	c := len(ed.header.fields)
	ed.header.fields = append(slices.Clone(ed.header.fields), name)
	ed.header.raw = nil
	ed.col[name] = c
	for i := range ed.rows {
		ed.widen(i, c+1)
	}
	return c
}

// widen gives row i at least n fields.
func (ed *InventoryEdit) widen(i, n int) {
	r := &ed.rows[i]
	if len(r.fields) < n {
		r.fields = append(slices.Clone(r.fields), make([]string, n-len(r.fields))...)
		r.raw = nil
	}
}

// Add appends a node: fields by column name (name is required). Columns the file lacks are added.
func (ed *InventoryEdit) Add(fields map[string]string) error {
	name := fields["name"]
	if name == "" {
		return errors.New("missing node name")
	}
	if ed.find(name) >= 0 {
		return fmt.Errorf("node %q is already in %s", name, ed.file)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		ed.column(k)
	}
	row := editRow{fields: make([]string, len(ed.header.fields))}
	for k, v := range fields {
		row.fields[ed.col[k]] = v
	}
	ed.rows = append(ed.rows, row)
	return nil
}

// Set changes fields (by column name) of the named node; an empty value clears the field.
func (ed *InventoryEdit) Set(name string, fields map[string]string) error {
	i := ed.find(name)
	if i < 0 {
		return fmt.Errorf("node %q is not in %s", name, ed.file)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		c := ed.column(k)
		ed.widen(i, c+1)
		if ed.rows[i].fields[c] != fields[k] {
			ed.rows[i].fields = slices.Clone(ed.rows[i].fields)
			ed.rows[i].fields[c] = fields[k]
			ed.rows[i].raw = nil
		}
	}
	return nil
}

// Get returns a field of the named node ("" when the column or the node is missing).
func (ed *InventoryEdit) Get(name, column string) string {
	i, c := ed.find(name), ed.col[column]
	if _, ok := ed.col[column]; !ok || i < 0 || c >= len(ed.rows[i].fields) {
		return ""
	}
	return strings.TrimSpace(ed.rows[i].fields[c])
}

// Delete removes the named node's row. The comments above it stay, above the next row.
func (ed *InventoryEdit) Delete(name string) error {
	i := ed.find(name)
	if i < 0 {
		return fmt.Errorf("node %q is not in %s", name, ed.file)
	}
	lead := ed.rows[i].lead
	ed.rows = slices.Delete(ed.rows, i, i+1)
	if i < len(ed.rows) {
		ed.rows[i].lead = append(slices.Clone(lead), ed.rows[i].lead...)
	} else {
		ed.tail = append(slices.Clone(lead), ed.tail...)
	}
	return nil
}

// Bytes returns the edited file's text.
func (ed *InventoryEdit) Bytes() ([]byte, error) {
	var b bytes.Buffer
	for _, r := range append([]editRow{ed.header}, ed.rows...) {
		if err := writeEditRow(&b, r); err != nil {
			return nil, err
		}
	}
	b.Write(ed.tail)
	return b.Bytes(), nil
}

// writeEditRow writes a row: as read when it is unchanged, else encoded from its fields.
func writeEditRow(b *bytes.Buffer, r editRow) error {
	if b.Len() > 0 && b.Bytes()[b.Len()-1] != '\n' {
		b.WriteByte('\n') // the file ended without a newline and a row follows
	}
	b.Write(r.lead)
	if r.raw != nil {
		b.Write(r.raw)
		return nil
	}
	w := csv.NewWriter(b)
	if err := w.Write(r.fields); err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	w.Flush()
	return w.Error()
}

// Unchanged reports whether data, the edited text, is the text that was read.
func (ed *InventoryEdit) Unchanged(data []byte) bool { return bytes.Equal(data, ed.orig) }

// Check parses the edited text as the server will, so that an edit giving an inventory the
// server would refuse is refused before anything is written.
func (ed *InventoryEdit) Check(h *topology.Hierarchy) (*Inventory, error) {
	data, err := ed.Bytes()
	if err != nil {
		return nil, err
	}
	return ParseInventoryCSV(data, ed.file, h)
}

// CheckFlat is Check for a flat machine, which the inventory itself describes: a node added is a
// node of the machine, which grows with it.
func (ed *InventoryEdit) CheckFlat() (*Inventory, error) {
	data, err := ed.Bytes()
	if err != nil {
		return nil, err
	}
	inv, err := ParseInventoryCSV(data, ed.file, nil)
	if err != nil {
		return nil, err
	}
	if _, err := FlatHierarchy(inv); err != nil {
		return nil, err
	}
	return inv, nil
}

// ErrInventoryChanged is returned by Save when the file changed since it was read.
var ErrInventoryChanged = errors.New("the inventory file changed while it was edited; run the command again")

// Save writes the edited text over the file it was read from, through a temporary file in the
// same directory and a rename, so that a reader (or a crash) sees the old file or the new one,
// never half of one. The file's mode is kept. A file that changed since it was read is left as it
// is (ErrInventoryChanged): writing over it would lose the other edit.
func (ed *InventoryEdit) Save() error {
	data, err := ed.Bytes()
	if err != nil {
		return err
	}
	fi, err := os.Stat(ed.file)
	if err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	now, err := os.ReadFile(ed.file)
	if err != nil {
		return fmt.Errorf("inventory: %w", err)
	}
	if !bytes.Equal(now, ed.orig) {
		return fmt.Errorf("%s: %w", ed.file, ErrInventoryChanged)
	}
	if err := atomicfile.WriteFile(ed.file, data, fi.Mode().Perm()); err != nil {
		return fmt.Errorf("inventory: writing %s: %w", ed.file, err)
	}
	return nil
}
