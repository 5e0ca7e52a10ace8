# attack: res-tmpfs-fill
# category: resources
# expect: blocked: /tmp, /workspace and /dev/shm are size-limited tmpfs: writing fails with ENOSPC at their size (or earlier at the memory limit), and the files are freed with the session
# check: memory, died-ok
# timeout: 40
lim = HOST["limits"]
buf = b"\xa5" * (1 << 20)
for d, size in (("/tmp", lim["tmp"]), ("/workspace", lim["workspace"]), ("/dev/shm", lim["tmp"])):
    path = os.path.join(d, "fill")
    written = 0
    try:
        with open(path, "wb") as f:
            while written < 4 * size:
                written += f.write(buf)
                f.flush()
        escaped("wrote %d MiB to %s (size %d MiB)" % (written >> 20, d, size >> 20))
    except OSError as e:
        blocked("%s on %s after %d MiB" % (ename(e.errno), d, written >> 20))
    except MemoryError:
        blocked("MemoryError on %s after %d MiB" % (d, written >> 20))
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
done()
