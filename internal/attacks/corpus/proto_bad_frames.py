# attack: proto-bad-frames
# category: protocol
# expect: blocked: a frame header announcing 4 GiB is refused before any allocation (frame size cap); the host kills the sandbox instead of reading on
# check: died-ok, rss
sess = find_channel()
print("VERDICT blocked oversized frame refused", flush=True)
time.sleep(0.2)
os.write(sess.channel._wfd, struct.pack(">BI", ord("O"), 0xFFFFFFFF) + b"x" * 65536)
time.sleep(5)
print("VERDICT escaped the host kept reading after a 4 GiB frame header")
