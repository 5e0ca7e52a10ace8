# attack: proto-close-channel
# category: protocol
# expect: blocked: closing the channel (both ends) while a child keeps running ends the sandbox: the host sees EOF, kills what is left, reports the lost state and the next call works
# check: died-ok, bounded
# timeout: 3
sess = find_channel()
print("VERDICT blocked closing the channel ends the sandbox", flush=True)
time.sleep(0.3)
if os.fork() == 0:
    os.setsid()
    time.sleep(3600)
    os._exit(0)
os.close(sess.channel._wfd)
os.close(sess.channel._rfd)
time.sleep(3600)
