// Package fabricsim predicts what booting a batch of nodes costs on a machine.
//
// Analyze is the paper's analytic model: every booting node's route from its boot server is a
// sequence of channels; a channel's sharers are the booting nodes whose route crosses it; a node's
// bandwidth on a segment is capacity/sharers of its channel there, its bandwidth the minimum over
// its route, and the batch's bandwidth that of its slowest node. Boot time is image size over batch
// bandwidth.
package fabricsim
