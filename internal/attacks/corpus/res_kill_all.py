# attack: res-kill-all
# category: resources
# expect: blocked: kill(-1, SIGKILL), then SIGKILL to pid 1 and to itself, takes down only the sandbox's own processes: the call reports a lost interpreter, codemode and other sessions carry on, the next call works
# check: died-ok
print("VERDICT blocked killed everything it could see: only its own sandbox", flush=True)
os.kill(-1, signal.SIGKILL)  # every process it may signal, except itself and pid 1
os.kill(1, signal.SIGKILL)
os.kill(os.getpid(), signal.SIGKILL)
time.sleep(2)
