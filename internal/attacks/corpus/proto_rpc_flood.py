# attack: proto-rpc-flood
# category: protocol
# expect: blocked: with the channel stalled, 150,000 RPC requests must not make the host hold 150,000 blocked replies: in-flight RPCs per sandbox are bounded (the host stops reading), the host's memory stays bounded, and a sandbox that stops reading its replies is killed
# check: rss, died-ok
# timeout: 20
sess = find_channel()
sess.rpc.resolve = lambda msg: time.sleep(10 ** 6)
big = "x" * (1 << 20)
for i in range(2):
    sess.channel.send_message({"type": "rpc", "id": 10 ** 9 + i, "method": "to_toon", "params": {"value": big}})
n = 0
try:
    for n in range(150000):
        sess.channel.send_message({"type": "rpc", "id": n, "method": "memory_list", "params": {}})
except OSError as e:
    blocked("the host stopped reading: %s after %d requests" % (ename(e.errno), n))
print("sent", n + 1, "requests", flush=True)
blocked("host memory bounded (checked by the host)")
done()
