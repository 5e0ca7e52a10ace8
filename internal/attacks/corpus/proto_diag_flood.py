# attack: proto-diagnostics-flood
# category: protocol
# expect: blocked: the sandbox's own stderr (runtime diagnostics, which the host copies to its log) cannot be used to write unbounded data into codemode's log: at most a bounded amount per call reaches it
# check: log
sess = find_channel()
line = b"codemode-attack diagnostics flood " + b"x" * 990 + b"\n"
buf = line * 1024
for _ in range(32):
    os.write(sess.diagnostics, buf)
blocked("diagnostics bounded (checked by the host's log)")
done()
