// Package packaging holds bootfabric's Debian package: the script that builds it (build-deb, run
// by `make deb`), the systemd unit and the maintainer scripts (debian/). It has no code; its test
// builds the package twice (the same bytes), installs it into a Debian root made with mmdebstrap,
// checks the unit with systemd-analyze and runs `bootctl serve --check` there on the shipped
// example configuration.
package packaging
