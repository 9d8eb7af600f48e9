package fabricsim

// BootFiles returns the files of a default boot with an image of imageBytes, as `bootctl
// simulate` fetches them without --files: DefaultFiles (NBP, kernel, initrd) when the image is the
// default kernel plus initrd, else the NBP and one image file. The NBP is always TFTP (PXE firmware
// speaks nothing else); the rest goes over proto. Callers that predict a boot for a given image
// size (the report, simulate --image-size) share this rule so that they agree on the same batch.
func BootFiles(imageBytes float64, proto Protocol) []File {
	files := DefaultFiles(proto)
	if imageBytes == DefaultKernelBytes+DefaultInitrdBytes {
		return files
	}
	return []File{files[0], {Name: "image", Bytes: imageBytes, Protocol: proto}}
}

// BootFlowConfig is DefaultFlowConfig with the files of BootFiles: the end-to-end boot (DHCP, the
// NBP, the image over proto under its protocol cap, the health report) of an image of imageBytes.
func BootFlowConfig(imageBytes float64, proto Protocol) FlowConfig {
	cfg := DefaultFlowConfig(proto)
	cfg.Files = BootFiles(imageBytes, proto)
	return cfg
}
