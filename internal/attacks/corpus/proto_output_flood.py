# attack: proto-output-flood
# category: protocol
# expect: blocked: output frames written straight onto the channel (bypassing the capture pipes), 16 frames of 32 MiB, are still capped like any output and the host's memory stays bounded
# check: output, rss
# timeout: 60
sess = find_channel()
blob = b"B" * (32 << 20)
for _ in range(16):
    sess.channel.send(ord("O"), blob)
blob = None
blocked("raw output frames capped by the host (checked by the host)")
done()
