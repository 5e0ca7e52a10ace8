# The connector bridges an exec's stdio to the keeper's socket (argv[1]),
# byte for byte, and ends when either side does.
import os, socket, sys, threading, time

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
deadline = time.monotonic() + 10
while True:
    try:
        s.connect(sys.argv[1])
        break
    except OSError as e:
        if time.monotonic() > deadline:
            os.write(2, ("codemode connector: %s\n" % e).encode())
            os._exit(1)
        time.sleep(0.02)


def up():
    while True:
        data = os.read(0, 1 << 16)
        if not data:
            os._exit(0)
        s.sendall(data)


threading.Thread(target=up, daemon=True).start()
while True:
    data = s.recv(1 << 16)
    if not data:
        os._exit(0)
    while data:
        data = data[os.write(1, data):]
