package seccomp

import (
	"encoding/json"
	"runtime"
	"slices"
)

// OCIProfile returns the policy as an OCI seccomp profile (the JSON that
// `podman run --security-opt seccomp=FILE` and docker accept) for this
// machine's architecture, whose Linux VM runs the containers on macOS too.
func OCIProfile() ([]byte, error) {
	return ociProfile(runtime.GOARCH)
}

// ociProfile builds the profile for goarch. Only its native ABI is listed,
// so syscalls of another ABI (x32, i386, AArch32) are refused by the
// engine's bad-architecture action.
func ociProfile(goarch string) ([]byte, error) {
	a, err := archFor(goarch)
	if err != nil {
		return nil, err
	}
	type arg struct {
		Index    uint   `json:"index"`
		Value    uint64 `json:"value"`
		ValueTwo uint64 `json:"valueTwo"`
		Op       string `json:"op"`
	}
	type rule struct {
		Names    []string `json:"names"`
		Action   string   `json:"action"`
		ErrnoRet uint     `json:"errnoRet"`
		Args     []arg    `json:"args,omitempty"`
	}
	var names []string
	for _, name := range Denied {
		if !slices.Contains(a.absent, name) {
			names = append(names, name)
		}
	}
	rules := []rule{
		{Names: names, Action: "SCMP_ACT_ERRNO", ErrnoRet: eperm},
		{Names: []string{"clone3"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: enosys},
	}
	// One rule per flag: the masked comparison tests (arg0 & flag) == flag.
	for _, f := range namespaceFlags {
		rules = append(rules, rule{Names: []string{"clone"}, Action: "SCMP_ACT_ERRNO", ErrnoRet: eperm,
			Args: []arg{{Index: 0, Value: f, ValueTwo: f, Op: "SCMP_CMP_MASKED_EQ"}}})
	}
	profile := map[string]any{
		"defaultAction":   "SCMP_ACT_ALLOW",
		"defaultErrnoRet": eperm,
		"architectures":   []string{a.oci},
		"syscalls":        rules,
	}
	return json.MarshalIndent(profile, "", "  ")
}
