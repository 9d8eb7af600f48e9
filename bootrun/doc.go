// Package bootrun runs a planned batch boot as a closed loop: it powers nodes on through their
// BMCs as capacity frees behind each boot server and bottleneck segment, moves each link's
// in-flight limit with what the boot servers measure (AIMD, against the firmware's patience it
// learns), watches every node's phases against the prediction, retries a node that misses its
// deadline, and backs off (or pauses) when too many fail.
//
// The Controller is a pure state machine: it takes events (a BMC answered, a node's boot reached
// a phase, a transfer measured or given up, time passed, the operator paused) and returns
// actions (power on, power cycle, power off, give up, pause, resume). Two plants drive it:
// Predict runs it against fabricsim in simulated time (the dry run, and the benchmark on the
// paper's machine), and a Live run against the boot servers' progress API and the nodes' power
// controllers.
package bootrun
