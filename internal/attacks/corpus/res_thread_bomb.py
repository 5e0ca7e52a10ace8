# attack: res-thread-bomb
# category: resources
# expect: blocked: threads count against the same pids limit: starting threads fails (RuntimeError from EAGAIN) long before the host notices
# check: procs
# timeout: 30
import threading
limit = HOST["limits"]["pids"]
stop = threading.Event()
threads, err = [], None
while len(threads) < limit * 8:
    t = threading.Thread(target=stop.wait, daemon=True)
    try:
        t.start()
    except RuntimeError as e:
        err = e
        break
    threads.append(t)
stop.set()
for t in threads:
    t.join()
print("started", len(threads), "threads;", err)
if len(threads) >= limit * 8:
    escaped("started %d threads with a pids limit of %d" % (len(threads), limit))
else:
    blocked("can't start new thread after %d (limit %d)" % (len(threads), limit))
done()
