# attack: kernel-perf
# category: kernel
# expect: blocked: perf_event_open, per-process and system-wide, is refused by seccomp (EPERM)
# gvisor: contained: gVisor's perf_event_open is not the host's
# parallel: yes
SYS_perf_event_open = 298
PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK = 1, 0
PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES = 0, 0
for typ, cfg, pid, cpu, label in ((PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, -1, "self cpu-clock"),
                                  (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, -1, 0, "system-wide cycles")):
    attr = ctypes.create_string_buffer(struct.pack("<IIQ", typ, 128, cfg), 128)
    rc, err = sys_call(SYS_perf_event_open, attr, pid, cpu, -1, 0)
    if rc == -1:
        blocked(why("perf_event_open", err))
    else:
        os.close(rc)
        escaped("perf_event_open(%s) returned an fd" % label)
done()
