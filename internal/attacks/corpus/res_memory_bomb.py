# attack: res-memory-bomb
# category: resources
# expect: blocked: touching memory past the limit ends in an OOM kill of the sandbox (memory cgroup) or MemoryError (RLIMIT_AS); the host's free memory drops by at most the limit, and the next call works in a fresh interpreter
# check: memory, died-ok
# timeout: 30
limit = HOST["limits"]["memory"]
chunk = 32 << 20
held, total = [], 0
try:
    while total < 4 * limit:
        b = bytearray(chunk)
        for i in range(0, chunk, 4096):
            b[i] = 1
        held.append(b)
        total += chunk
        if total % (128 << 20) == 0:
            print("holding", total >> 20, "MiB", flush=True)
except MemoryError:
    del held
    blocked("MemoryError at %d MiB (limit %d MiB)" % (total >> 20, limit >> 20))
else:
    del held
    escaped("held %d MiB with a limit of %d MiB" % (total >> 20, limit >> 20))
done()
