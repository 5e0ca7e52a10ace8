# attack: res-cpu-past-timeout
# category: resources
# expect: blocked: busy processes that ignore SIGINT and SIGTERM are all killed when the call's timeout and grace period are over; the call ends as a timeout, nothing keeps running
# check: timeout, procs, stopped
# timeout: 2
# Every busy process beats into the host's heartbeat file: the host sees
# whether any of them still makes progress once the call has returned.
beat = heartbeat()
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        while True:
            try:
                beat()
            except BaseException:  # noqa: B036
                pass
while True:
    try:
        beat()
    except BaseException:  # noqa: B036
        pass
