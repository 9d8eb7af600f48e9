// Package bootrun runs a planned batch boot as a closed loop: it powers nodes on through their
// BMCs as capacity frees behind each boot server and bottleneck segment, watches every node's
// phases against the prediction, retries a node that misses its deadline, and pauses when too
// many fail.
//
// The Controller is a pure state machine: it takes events (a BMC answered, a node's boot reached
// a phase, time passed, the operator paused) and returns actions (power on, power cycle, give
// up, pause). Two plants drive it: Predict runs it against fabricsim in simulated time (the
// dry run, and the benchmark on the paper's machine), and a Live run against the boot servers'
// status API and the nodes' power controllers.
package bootrun
