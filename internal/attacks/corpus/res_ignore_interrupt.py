# attack: res-ignore-interrupt
# category: resources
# expect: blocked: code that swallows KeyboardInterrupt and ignores SIGINT is killed once the grace period is over; the call ends as a timeout and the next one runs in a fresh interpreter
# check: timeout, stopped
# timeout: 2
beat = heartbeat()
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    try:
        beat()
        time.sleep(0.05)
    except BaseException:  # noqa: B036
        pass
