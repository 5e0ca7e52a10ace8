# attack: proto-unknown-message
# category: protocol
# expect: blocked: messages the host does not expect (a second 'ready', an unknown type, unknown members, a bad frame kind) are protocol violations; the host kills the sandbox and carries on
# check: died-ok
sess = find_channel()
print("VERDICT blocked unexpected messages end the sandbox", flush=True)
time.sleep(0.2)
sess.channel.send_message({"type": "ready", "python": "9.9", "pid": 1})
sess.channel.send_message({"type": "shell", "cmd": "id"})
sess.channel.send(ord("Z"), b"{}")
time.sleep(5)
print("VERDICT escaped the host accepted unexpected messages")
