package seccomp

import "encoding/json"

// OCIProfile returns the policy as an OCI seccomp profile (the JSON that
// `podman run --security-opt seccomp=FILE` and docker accept). Only x86_64
// is listed, so syscalls of another ABI (x32, i386) are refused by the
// engine's bad-architecture action.
func OCIProfile() []byte {
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
	names := make([]string, len(Denied))
	for i, s := range Denied {
		names[i] = s.Name
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
		"architectures":   []string{"SCMP_ARCH_X86_64"},
		"syscalls":        rules,
	}
	data, err := json.MarshalIndent(profile, "", "  ")
	if err != nil {
		panic(err) // static data
	}
	return data
}
