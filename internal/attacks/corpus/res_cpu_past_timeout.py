# attack: res-cpu-past-timeout
# category: resources
# expect: blocked: busy processes that ignore SIGINT and SIGTERM are all killed when the call's timeout and grace period are over; the call ends as a timeout, nothing keeps running
# check: timeout, procs
# timeout: 2
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
while True:
    try:
        pass
    except BaseException:  # noqa: B036
        pass
