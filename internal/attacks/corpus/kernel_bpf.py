# attack: kernel-bpf
# category: kernel
# expect: blocked: bpf(BPF_MAP_CREATE) and bpf(BPF_PROG_LOAD) are refused by seccomp (EPERM)
# gvisor: contained: gVisor implements no bpf(2) for applications
# parallel: yes
SYS_bpf = 321
BPF_MAP_CREATE, BPF_PROG_LOAD = 0, 5
BPF_MAP_TYPE_ARRAY, BPF_PROG_TYPE_SOCKET_FILTER = 2, 1
attr = ctypes.create_string_buffer(struct.pack("<IIII", BPF_MAP_TYPE_ARRAY, 4, 8, 1), 128)
try_syscall("bpf", SYS_bpf, BPF_MAP_CREATE, attr, 128, ok="bpf(BPF_MAP_CREATE) created a map")
# r0 = 0; exit
insns = ctypes.create_string_buffer(struct.pack("<BBhiBBhi", 0xb7, 0, 0, 0, 0x95, 0, 0, 0), 16)
lic = ctypes.create_string_buffer(b"GPL")
prog = struct.pack("<IIQQIIQ", BPF_PROG_TYPE_SOCKET_FILTER, 2, ctypes.addressof(insns), ctypes.addressof(lic), 0, 0, 0)
attr = ctypes.create_string_buffer(prog, 128)
try_syscall("bpf", SYS_bpf, BPF_PROG_LOAD, attr, 128, ok="bpf(BPF_PROG_LOAD) loaded a program")
done()
