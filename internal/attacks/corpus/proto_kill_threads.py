# attack: proto-kill-threads
# category: protocol
# expect: blocked: killing the runtime's output and channel threads from inside (an async SystemExit in each) wedges or ends only this interpreter; the call still ends (timeout or lost state) and the next call works
# check: bounded, died-ok
# timeout: 3
import threading
byname = {t.name: t for t in threading.enumerate()}
set_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
set_exc.argtypes = [ctypes.c_ulong, ctypes.py_object]
print("VERDICT blocked killing the runtime's threads hurts only this interpreter", flush=True)
time.sleep(0.3)
for name in ("codemode-output", "codemode-channel"):
    t = byname.get(name)
    if t is not None:
        set_exc(t.ident, SystemExit)
for _ in range(64):
    os.write(1, b"y" * 65536)  # fills the capture pipe nobody drains any more
time.sleep(3600)
