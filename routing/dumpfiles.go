package routing

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/topology"
)

// The files of an OpenSM dump on disk: written, read back and checked, and the verdict on tables
// and their dump.

// DumpFileError is a dump file that could not be written: it prints as "FILE: what went wrong".
type DumpFileError struct {
	File string
	Err  error
}

func (e *DumpFileError) Error() string { return e.File + ": " + e.Err.Error() }
func (e *DumpFileError) Unwrap() error { return e.Err }

// WriteDumpFiles writes the LFT dump of tb to path and, for tables on several virtual channels,
// the lanes that deploy them to path.sl and path.sl2vl. It returns the files written. An error
// writing a file is a *DumpFileError.
func WriteDumpFiles(path string, fab *topology.Fabric, tb *Tables) ([]string, error) {
	if err := createFile(path, func(fh *os.File) error { return WriteLFT(fh, fab, tb) }); err != nil {
		return nil, &DumpFileError{path, err}
	}
	if tb.NumVCs() <= 1 {
		return []string{path}, nil
	}
	lanes, err := AssignLanes(fab, tb)
	if err != nil {
		return nil, err
	}
	if err := createFile(path+".sl", func(fh *os.File) error { return lanes.WriteSL(fh) }); err != nil {
		return nil, &DumpFileError{path + ".sl", err}
	}
	if err := createFile(path+".sl2vl", func(fh *os.File) error { return lanes.WriteSL2VL(fh) }); err != nil {
		return nil, &DumpFileError{path + ".sl2vl", err}
	}
	return []string{path, path + ".sl", path + ".sl2vl"}, nil
}

// CheckDumpFiles reads back the files WriteDumpFiles wrote (the LFTs, then the SLs and the
// SL-to-VL tables if any) and follows every pair through them (CheckDump).
func CheckDumpFiles(fab *topology.Fabric, files []string) (*DumpCheck, error) {
	var df DumpFiles
	var open []*os.File
	defer func() {
		for _, fh := range open {
			fh.Close()
		}
	}()
	for i, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		open = append(open, fh)
		switch i {
		case 0:
			df.LFT, df.LFTName = fh, name
		case 1:
			df.SL, df.SLName = fh, name
		case 2:
			df.SL2VL, df.SL2VLName = fh, name
		}
	}
	return CheckDump(fab, df)
}

// ReadLFTFile reads the tables of the LFT dump at path onto fab (ReadLFT).
func ReadLFTFile(fab *topology.Fabric, path string) (*Tables, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return ReadLFT(fab, fh, path)
}

// createFile creates path and writes it with write.
func createFile(path string, write func(*os.File) error) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(fh)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// Verdict is nil when the tables are valid and their dump read back (nil without one) is too;
// else the error names every failure, so that a result printed with "valid false" does not read
// as a success to scripts.
func Verdict(rep *Report, dump *DumpCheck) error {
	var why []string
	if d := dump; d != nil {
		if d.Unreachable > 0 || d.Loops > 0 {
			why = append(why, fmt.Sprintf("the dump read back leaves %d pairs unreachable and %d in loops", d.Unreachable, d.Loops))
		}
		if !d.DeadlockFree {
			why = append(why, fmt.Sprintf("the dump read back is not deadlock-free: the lane dependencies of VL %s form a cycle", joinInts(d.CyclicVLs)))
		}
	}
	if rep.Valid && len(why) == 0 {
		return nil
	}
	if rep.Unreachable > 0 {
		why = append(why, fmt.Sprintf("%d unreachable pairs", rep.Unreachable))
	}
	if rep.Loops > 0 {
		why = append(why, fmt.Sprintf("%d destinations reached through a forwarding loop", rep.Loops))
	}
	if rep.UpDownChecked && rep.UpDownViolations > 0 {
		why = append(why, fmt.Sprintf("%d up*/down* violations", rep.UpDownViolations))
	}
	if !rep.DeadlockFree {
		why = append(why, fmt.Sprintf("not deadlock-free: the channel dependencies of virtual channel %s form a cycle", joinInts(rep.CyclicVCs)))
	}
	return fmt.Errorf("routing invalid: %s", strings.Join(why, "; "))
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}
