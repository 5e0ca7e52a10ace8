# attack: proto-forged-done
# category: protocol
# expect: blocked: the runtime's private channel can be found (same process), but a 'done' for a cell that is not running is a protocol violation: the host kills the sandbox, reports the lost state, and the next call runs in a fresh interpreter
# check: died-ok
import json
sess = find_channel()
print("VERDICT blocked the host kills a sandbox that forges frames", flush=True)
time.sleep(0.2)
sess.channel.send_message({"type": "done", "id": sess.current + 1000, "status": "ok", "exitCode": 0})
time.sleep(5)
print("VERDICT escaped the host accepted a done frame for an unknown cell")
