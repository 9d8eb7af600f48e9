package topology

import "os"

// WriteIBSimNetFile writes f as an ibsim net file at path (WriteIBSimNet).
func WriteIBSimNetFile(path string, f *Fabric) error {
	fh, err := os.Create(path)
	if err != nil {
		return err
	}
	err = WriteIBSimNet(fh, f)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	return err
}

// WithLIDsFile returns the fabric with the identities of the file at path: OpenSM's guid2lid
// file, or an ibnetdiscover or saquery output (ParseLIDs, WithLIDs).
func (f *Fabric) WithLIDsFile(path string) (*Fabric, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	m, err := ParseLIDs(fh, path)
	if err != nil {
		return nil, err
	}
	return f.WithLIDs(m)
}
