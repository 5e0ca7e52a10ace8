package linuxns

// initConfig is what the host sends the sandbox init over fd 3. The host
// writes it only after the init is in its cgroups, so reading it is also the
// init's go-ahead.
type initConfig struct {
	Rootfs         string     `json:"rootfs,omitempty"` // "" = the host's system directories
	HostDirs       []string   `json:"hostDirs,omitempty"`
	EtcFiles       []string   `json:"etcFiles,omitempty"` // host /etc entries bound read-only in host mode
	Command        []string   `json:"command"`
	Env            []string   `json:"env"`
	Dir            string     `json:"dir"`
	Hostname       string     `json:"hostname"`
	TmpBytes       int64      `json:"tmpBytes"`
	WorkspaceBytes int64      `json:"workspaceBytes"`
	Mounts         []bindSpec `json:"mounts,omitempty"`
	Rlimits        []rlimit   `json:"rlimits"`
	Landlock       bool       `json:"landlock"`
	Probe          bool       `json:"probe,omitempty"` // set up, report, exit without starting the command
	// Template: the command is a zygote (zygote.py). It keeps uid 0 and
	// its capabilities inside the sandbox's user namespace, without
	// Landlock or seccomp, because every child it forks builds its own
	// sandbox from there; it never runs user code.
	Template bool `json:"template,omitempty"`
	// MountPoints are made in a zygote's root for its children's mounts.
	MountPoints []mountPoint `json:"mountPoints,omitempty"`
}

type bindSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	Writable bool   `json:"writable"`
}

type rlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// initStatus is the init's one report to the host, on fd 4.
type initStatus struct {
	OK       bool     `json:"ok"`
	Error    string   `json:"error,omitempty"`
	PID      int      `json:"pid,omitempty"`      // the command's pid inside the sandbox
	Landlock string   `json:"landlock,omitempty"` // what Landlock enforced, or why not
	Warnings []string `json:"warnings,omitempty"`
}
