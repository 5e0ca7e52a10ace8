# attack: proto-stall-channel
# category: protocol
# expect: blocked: code that stops the runtime from reading the channel, then makes the host write more than a pipe holds (two 1 MiB RPC replies), must still end in status timeout within the grace period: the host's writes to the sandbox must never block its timeout
# check: timeout
# timeout: 2
sess = find_channel()
sess.rpc.resolve = lambda msg: time.sleep(10 ** 6)  # the channel thread blocks on the next reply
big = "x" * (1 << 20)
for i in range(2):
    sess.channel.send_message({"type": "rpc", "id": 10 ** 9 + i, "method": "to_toon", "params": {"value": big}})
time.sleep(3600)
