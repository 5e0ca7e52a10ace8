# attack: res-huge-output
# category: resources
# expect: blocked: 256 MiB written to stdout and stderr come back capped (head and tail within the output limit, the rest counted as omitted), with the host's memory bounded by the spool limit
# check: output, rss
# timeout: 60
block = (b"A" * 1023 + b"\n") * 1024
for _ in range(192):
    os.write(1, block)
for _ in range(64):
    os.write(2, block)
blocked("output capped by the host (checked by the host)")
done()
